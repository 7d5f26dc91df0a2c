extension URLConnectionOperation {
    /// How far an operation has got in giving its outcome. It only moves forward, one step at
    /// a time, inside ``changingPhase(_:)``: the one fact that "the outcome is given" in its
    /// several senses (it left `ready`; its observers were taken; it was delivered) is read
    /// from, instead of a flag for each.
    enum Delivery: Int, Comparable {
        /// Not taken by `start()` (or a refusal) yet.
        case ready
        /// Taken: its transfer runs, pauses or ends; the outcome is not handed out yet.
        case running
        /// The outcome is being handed out: `processResponse()` ran and the outcome observers
        /// were taken to run; one added from now on runs at once.
        case observersTaken
        /// Delivered: the observers ran, and Foundation is told the operation finished.
        case delivered

        static func < (lhs: Delivery, rhs: Delivery) -> Bool { lhs.rawValue < rhs.rawValue }
    }
}
