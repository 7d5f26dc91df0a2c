import Foundation
import Synchronization

/// Parses and formats HTTP dates (RFC 9110 §5.6.7).
///
/// Recipients must accept all three historical forms: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and the obsolete asctime form
/// (`Sun Nov  6 08:49:37 1994`). Senders only use IMF-fixdate.
///
/// Thread-safety: `DateFormatter` is not Sendable, so the formatters are created once and
/// used only while holding one `Mutex`.
enum HTTPDate {
    /// The formatters, one per accepted form, all POSIX locale and GMT.
    private struct Formatters {
        /// IMF-fixdate, the preferred form; also used for output.
        let imfFixdate: DateFormatter
        /// RFC 850, with a two-digit year.
        let rfc850: DateFormatter
        /// ANSI C asctime(); parsed after collapsing runs of spaces.
        let asctime: DateFormatter

        /// Creates the three formatters.
        init() {
            imfFixdate = Self.make("EEE, dd MMM yyyy HH:mm:ss 'GMT'")
            rfc850 = Self.make("EEEE, dd-MMM-yy HH:mm:ss 'GMT'")
            // §5.6.7: a two-digit year more than 50 years in the future is read as the
            // most recent past year with the same last two digits.
            rfc850.twoDigitStartDate = Date().addingTimeInterval(-49 * 365.25 * 86_400)
            asctime = Self.make("EEE MMM d HH:mm:ss yyyy")
        }

        /// A strict POSIX-locale GMT formatter for one pattern.
        /// - Parameter format: The `dateFormat` pattern.
        /// - Returns: The configured formatter.
        private static func make(_ format: String) -> DateFormatter {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(secondsFromGMT: 0)
            formatter.calendar = Calendar(identifier: .gregorian)
            formatter.isLenient = false
            formatter.dateFormat = format
            return formatter
        }
    }

    /// The shared formatters; see the type's thread-safety note.
    private static let formatters = Mutex(Formatters())

    /// Parses any of the three HTTP date forms.
    /// - Parameter text: A field value such as an `Expires` or `Date` value.
    /// - Returns: The date, or nil when the text is not a valid HTTP date.
    static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        let collapsed = trimmed.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        return formatters.withLock { formatters in
            formatters.imfFixdate.date(from: trimmed)
                ?? formatters.rfc850.date(from: trimmed)
                ?? formatters.asctime.date(from: collapsed)
        }
    }

    /// Formats a date as IMF-fixdate, the form senders must generate.
    /// - Parameter date: The date to format.
    /// - Returns: Text such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ date: Date) -> String {
        formatters.withLock { $0.imfFixdate.string(from: date) }
    }
}
