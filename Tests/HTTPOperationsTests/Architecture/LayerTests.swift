import Foundation
import Testing

extension AllTests {
    /// Docs/Architecture.md's layer table, held to the code where it makes a strict claim:
    /// a folder lower in the request's way names no type declared in a folder above it. A
    /// name counts when it appears as a whole word outside comments.
    @Suite struct Layers {
        /// The library's sources, found from this file (Tests/HTTPOperationsTests/Architecture/).
        static let library = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/HTTPOperations")

        /// The Swift files directly in `folder` (a path under the library).
        static func files(in folder: String) throws -> [URL] {
            let url = library.appendingPathComponent(folder)
            return try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "swift" }
        }

        /// The code of `file` without its comments.
        static func code(of file: URL) throws -> String {
            try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                .map { line in line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line) }
                .joined(separator: "\n")
        }

        /// The names of the types, protocols and typealiases declared at the top level of
        /// `folder`'s files (nested ones are reached through them).
        static func declaredTypes(in folder: String) throws -> Set<String> {
            let pattern = try NSRegularExpression(pattern: #"^(?:public |open |final |private |fileprivate |internal )*(?:class|struct|enum|protocol|typealias|actor) ([A-Za-z_][A-Za-z0-9_]*)"#,
                                                  options: .anchorsMatchLines)
            var names = Set<String>()
            for file in try files(in: folder) {
                let text = try code(of: file)
                for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    if let range = Range(match.range(at: 1), in: text) { names.insert(String(text[range])) }
                }
            }
            return names
        }

        /// Each use, in `lower`'s files, of a type declared in one of `upper`: "file: Name".
        static func upwardUses(from lower: String, to upper: [String]) throws -> [String] {
            var above = Set<String>()
            for folder in upper { above.formUnion(try declaredTypes(in: folder)) }
            #expect(!above.isEmpty, "no type found above \(lower): the probe reads nothing")
            var uses: [String] = []
            for file in try files(in: lower) {
                let words = Set(try code(of: file).split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
                for name in above.intersection(words).sorted() { uses.append("\(file.lastPathComponent): \(name)") }
            }
            return uses
        }

        /// "`Curl/` … names no type of `Transfer/`, `Operation/` or `Client/`."
        @Test func curlNamesNothingAboveIt() throws {
            let uses = try Self.upwardUses(from: "Curl", to: ["Transfer", "Operation", "Client", "Client/HTTPTypes"])
            #expect(uses.isEmpty, "\(uses)")
        }

        /// `HTTP/` holds values of the protocol: it names nothing of the operation, its transfer
        /// or the client.
        @Test func httpValuesNameNothingAboveThem() throws {
            let uses = try Self.upwardUses(from: "HTTP", to: ["Transfer", "Operation", "Client", "Client/HTTPTypes"])
            #expect(uses.isEmpty, "\(uses)")
        }

        /// `Errors/` is below everything but `Security/`'s pinning mode (which `SecurityError`
        /// names): no error type depends on how a request is made.
        @Test func errorsNameNothingOfTheRequestsWay() throws {
            let uses = try Self.upwardUses(from: "Errors", to: ["Transfer", "Operation", "Client", "Client/HTTPTypes", "Curl", "Body/Request", "Body/Response"])
            #expect(uses.isEmpty, "\(uses)")
        }
    }
}
