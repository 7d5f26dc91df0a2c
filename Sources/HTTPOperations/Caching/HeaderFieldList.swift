import Foundation

/// Helpers for header field lists kept as `[(name: String, value: String)]` in received order.
///
/// Field names are case-insensitive (RFC 9110 §5.1), so every lookup here lowercases
/// both sides; repeated fields stay separate entries in the list and are only combined
/// on demand, using the list rules of RFC 9110 §5.3.
enum HeaderFieldList {
    /// All values of the fields called `name`, in received order.
    /// - Parameters:
    ///   - name: The field name to look for, in any case.
    ///   - fields: The message's header fields.
    /// - Returns: The values of every matching field line; empty when there is none.
    static func values(named name: String, in fields: [(name: String, value: String)]) -> [String] {
        let wanted = name.lowercased()
        return fields.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The values of all fields called `name` combined into one, as RFC 9110 §5.3 allows.
    /// - Parameters:
    ///   - name: The field name to look for, in any case.
    ///   - fields: The message's header fields.
    /// - Returns: The trimmed values joined with ", ", or nil when the field is absent.
    static func combinedValue(named name: String, in fields: [(name: String, value: String)]) -> String? {
        let found = values(named: name, in: fields)
        guard !found.isEmpty else { return nil }
        return found.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
    }

    /// The trimmed value of the first field called `name`, for singleton fields such as
    /// `ETag`, `Date` or `Expires` where a repeated line is an error and the first one wins.
    /// - Parameters:
    ///   - name: The field name to look for, in any case.
    ///   - fields: The message's header fields.
    /// - Returns: The first value, or nil when the field is absent.
    static func firstValue(named name: String, in fields: [(name: String, value: String)]) -> String? {
        values(named: name, in: fields).first.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// Whether any field called `name` is present.
    /// - Parameters:
    ///   - name: The field name to look for, in any case.
    ///   - fields: The message's header fields.
    /// - Returns: True when at least one field line has that name.
    static func contains(_ name: String, in fields: [(name: String, value: String)]) -> Bool {
        let wanted = name.lowercased()
        return fields.contains { $0.name.lowercased() == wanted }
    }

    /// The elements of a comma-separated list field (RFC 9110 §5.6.1), trimmed, empty
    /// elements dropped; commas inside quoted strings do not split.
    /// - Parameters:
    ///   - name: The list field to read, e.g. `Vary` or `Connection`.
    ///   - fields: The message's header fields.
    /// - Returns: Every element of every line of that field, in order.
    static func listElements(named name: String, in fields: [(name: String, value: String)]) -> [String] {
        values(named: name, in: fields).flatMap(splitList)
    }

    /// Splits one list-valued field value at commas that are outside quoted strings.
    /// - Parameter value: A field value such as `a, "b,c", d`.
    /// - Returns: The trimmed, non-empty elements.
    static func splitList(_ value: String) -> [String] {
        var elements: [String] = []
        var current = ""
        var insideQuotes = false
        var escaped = false
        for character in value {
            if escaped {
                escaped = false
            } else if insideQuotes && character == "\\" {
                escaped = true
            } else if character == "\"" {
                insideQuotes.toggle()
            } else if character == "," && !insideQuotes {
                elements.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        elements.append(current)
        return elements
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }
}
