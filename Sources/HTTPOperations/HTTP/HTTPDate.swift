import Foundation

/// Parses and formats HTTP dates (RFC 9110 §5.6.7), exactly as the grammar spells them.
///
/// Recipients must accept all three historical forms, and nothing else (an invalid `Expires`
/// means "already expired", an invalid `Last-Modified` is no validator):
///
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
/// - RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`
/// - asctime: `Sun Nov  6 08:49:37 1994`
///
/// Read by hand, byte by byte: `DateFormatter` accepts what the grammar does not, even with
/// `isLenient = false` (no comma, two spaces, dashes, one-digit hours), and it is not
/// `Sendable`. Senders only use IMF-fixdate, which ``format(_:)`` writes.
enum HTTPDate {
    private static let shortDays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Parses any of the three forms, now.
    /// - Parameter text: A field value such as an `Expires` or `Date` value.
    /// - Returns: The date, or nil when the text is not a valid HTTP date.
    static func parse(_ text: String) -> Date? {
        parse(text, now: Date())
    }

    /// Parses any of the three forms; `now` decides the century of an RFC 850 year.
    /// - Parameters:
    ///   - text: A field value such as an `Expires` or `Date` value (spaces around it are
    ///     the field's, not the date's, and are ignored).
    ///   - now: The current time.
    /// - Returns: The date, or nil when the text is not a valid HTTP date.
    static func parse(_ text: String, now: Date) -> Date? {
        var bytes = Array(text.utf8)[...]
        while bytes.first == 0x20 || bytes.first == 0x09 { bytes.removeFirst() }
        while bytes.last == 0x20 || bytes.last == 0x09 { bytes.removeLast() }
        var reader = Reader(bytes: bytes)
        if let date = imfFixdate(&reader) { return date }
        reader = Reader(bytes: bytes)
        if let date = rfc850(&reader, now: now) { return date }
        reader = Reader(bytes: bytes)
        return asctime(&reader)
    }

    /// `day-name "," SP 2DIGIT SP month SP 4DIGIT SP time-of-day SP "GMT"`.
    private static func imfFixdate(_ reader: inout Reader) -> Date? {
        guard reader.word(in: shortDays) != nil, reader.literal(", "), let day = reader.digits(2), reader.literal(" "),
              let month = reader.word(in: months), reader.literal(" "), let year = reader.digits(4), reader.literal(" "),
              let time = reader.timeOfDay(), reader.literal(" GMT"), reader.atEnd else { return nil }
        return date(year: year, month: month + 1, day: day, time: time)
    }

    /// `day-name-l "," SP 2DIGIT "-" month "-" 2DIGIT SP time-of-day SP "GMT"`; a two-digit
    /// year more than 50 years in the future is the most recent past year with those digits.
    private static func rfc850(_ reader: inout Reader, now: Date) -> Date? {
        guard reader.word(in: longDays) != nil, reader.literal(", "), let day = reader.digits(2), reader.literal("-"),
              let month = reader.word(in: months), reader.literal("-"), let twoDigits = reader.digits(2), reader.literal(" "),
              let time = reader.timeOfDay(), reader.literal(" GMT"), reader.atEnd else { return nil }
        let thisYear = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(secondsFromGMT: 0)!, from: now).year ?? 2000
        var year = thisYear - thisYear % 100 + twoDigits
        if year > thisYear + 50 { year -= 100 }
        return date(year: year, month: month + 1, day: day, time: time)
    }

    /// `day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP 4DIGIT`.
    private static func asctime(_ reader: inout Reader) -> Date? {
        guard reader.word(in: shortDays) != nil, reader.literal(" "), let month = reader.word(in: months),
              reader.literal(" ") else { return nil }
        let day: Int
        if reader.literal(" ") {
            guard let digit = reader.digits(1) else { return nil }
            day = digit
        } else {
            guard let digits = reader.digits(2) else { return nil }
            day = digits
        }
        guard reader.literal(" "), let time = reader.timeOfDay(), reader.literal(" "), let year = reader.digits(4),
              reader.atEnd else { return nil }
        return date(year: year, month: month + 1, day: day, time: time)
    }

    /// The date, when every part is in range (a 60th second is allowed: leap seconds).
    private static func date(year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)) -> Date? {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...lengths[month - 1]).contains(day), time.hour < 24, time.minute < 60, time.second <= 60 else { return nil }
        // Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + time.hour * 3_600 + time.minute * 60 + time.second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Formats a date as IMF-fixdate, the form senders must generate.
    /// - Parameter date: The date to format.
    /// - Returns: Text such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ date: Date) -> String {
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(secondsFromGMT: 0)!, from: date)
        let weekday = ((parts.weekday ?? 1) + 5) % 7  // Calendar: 1 is Sunday; here 0 is Monday.
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(shortDays[weekday]), \(two(parts.day)) \(months[(parts.month ?? 1) - 1]) \(parts.year ?? 1970) "
            + "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }

    /// Reads the grammar's pieces from the front of the bytes.
    private struct Reader {
        var bytes: ArraySlice<UInt8>

        var atEnd: Bool { bytes.isEmpty }

        /// Takes `text` exactly (case-sensitive, as the grammar's names are).
        mutating func literal(_ text: StaticString) -> Bool {
            let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            guard bytes.starts(with: expected) else { return false }
            bytes.removeFirst(expected.count)
            return true
        }

        /// Takes the first of `words` that starts the bytes (whole); returns its index.
        mutating func word(in words: [String]) -> Int? {
            for (index, word) in words.enumerated() where bytes.starts(with: word.utf8) {
                let rest = bytes.dropFirst(word.utf8.count)
                guard rest.first.map({ !(0x41...0x5A).contains($0) && !(0x61...0x7A).contains($0) }) ?? true else { continue }
                bytes = rest
                return index
            }
            return nil
        }

        /// Takes exactly `count` ASCII digits.
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count >= count else { return nil }
            var value = 0
            for byte in bytes.prefix(count) {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            bytes.removeFirst(count)
            return value
        }

        /// `2DIGIT ":" 2DIGIT ":" 2DIGIT`.
        mutating func timeOfDay() -> (hour: Int, minute: Int, second: Int)? {
            guard let hour = digits(2), literal(":"), let minute = digits(2), literal(":"), let second = digits(2) else { return nil }
            return (hour, minute, second)
        }
    }
}
