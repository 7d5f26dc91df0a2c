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

        /// The code of `file` without its line comments (a `//` inside a string literal, as
        /// in a URL, is code).
        static func code(of file: URL) throws -> String {
            try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                .map { line -> String in
                    var inString = false
                    var previous: Character = " "
                    var kept = ""
                    for character in line {
                        if character == "\"", previous != "\\" { inString.toggle() }
                        if !inString, previous == "/", character == "/" {
                            kept.removeLast()
                            break
                        }
                        kept.append(character)
                        previous = character
                    }
                    return kept
                }
                .joined(separator: "\n")
        }

        /// The names of the types, protocols and typealiases declared at the top level of
        /// `folder`'s files (nested ones are reached through them). Members that extensions in
        /// a folder add to another folder's types are not seen: this checks names of types.
        static func declaredTypes(in folder: String) throws -> Set<String> {
            let pattern = try NSRegularExpression(
                pattern: #"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|open|final|private|fileprivate|internal|package|indirect|nonisolated)\s+)*(?:class|struct|enum|protocol|typealias|actor)\s+([A-Za-z_][A-Za-z0-9_]*)"#,
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

        /// The library's folders, each with its files (subfolders apart).
        static let folders = ["Client", "Client/HTTPTypes", "Operation", "Transfer", "Transfer/StateMachine", "Body/Request", "Body/Response", "Curl",
                              "HTTP", "Configuration", "Security", "Serialization", "Caching", "Observability",
                              "Reachability", "Errors", "ThreadSafety", "EventStream", "Upload"]

        /// Each use, in `lower`'s files, of a type declared in one of `upper` and not in
        /// `allowed`: "file: Name". Every folder read must hold declarations, so a folder that
        /// moved or emptied fails the test instead of passing it.
        static func upwardUses(from lower: String, to upper: [String], allowing allowed: Set<String> = []) throws -> [String] {
            var above = Set<String>()
            for folder in upper {
                let declared = try declaredTypes(in: folder)
                #expect(!declared.isEmpty, "\(folder) declares no type: the probe reads nothing there")
                above.formUnion(declared)
            }
            let files = try files(in: lower)
            #expect(!files.isEmpty, "\(lower) holds no Swift file")
            var uses: [String] = []
            for file in files {
                let words = Set(try code(of: file).split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
                for name in above.subtracting(allowed).intersection(words).sorted() {
                    uses.append("\(file.lastPathComponent): \(name)")
                }
            }
            return uses
        }

        /// Every folder but `kept` and `folder` itself.
        static func all(but kept: [String], besides folder: String) -> [String] {
            folders.filter { $0 != folder && !kept.contains($0) }
        }

        /// "`Curl/` … names no type of `Transfer/`, `Operation/` or `Client/`."
        @Test func curlNamesNothingAboveIt() throws {
            let uses = try Self.upwardUses(from: "Curl", to: ["Transfer", "Transfer/StateMachine", "Operation", "Client",
                                                              "Client/HTTPTypes"])
            #expect(uses.isEmpty, "\(uses)")
        }

        /// "`ThreadSafety/` … uses nothing": the lock and box types every folder uses name
        /// none of them.
        @Test func threadSafetyNamesNoOtherFolder() throws {
            let uses = try Self.upwardUses(from: "ThreadSafety", to: Self.all(but: [], besides: "ThreadSafety"))
            #expect(uses.isEmpty, "\(uses)")
        }

        /// "`HTTP/` … uses `Errors/`; `RequestFraming` reads `Curl/`'s `RequestBody` and
        /// `Body/Request/`'s `StreamedRequestBody`": nothing else.
        @Test func httpValuesUseOnlyErrors() throws {
            let uses = try Self.upwardUses(from: "HTTP", to: Self.all(but: ["Errors"], besides: "HTTP"),
                                           allowing: ["RequestBody", "StreamedRequestBody"])
            #expect(uses.isEmpty, "\(uses)")
        }

        /// "The operation's state is its own: only the files of `Operation/` open its lock"
        /// (URLConnectionOperation+Events.swift): elsewhere, an operation is told and asked by
        /// name. Every file of the library outside `Operation/` is read, with chains split over
        /// lines joined: none may reach into another object's `state` (`operation.state`),
        /// call `changingPhase` (which lends the state), or open a `state` lock unless it
        /// declares that `state` itself and extends no operation type.
        @Test func onlyTheOperationOpensItsState() throws {
            let reachingIn = try NSRegularExpression(pattern: #"[\w)?!\]]\.state\b"#)
            let extendsAnOperation = try NSRegularExpression(
                pattern: #"\bextension\s+(URLConnectionOperation|HTTPRequestOperation|DependentRequestOperation)\b"#)
            let operationFolder = Self.library.appendingPathComponent("Operation").standardizedFileURL.path + "/"
            // The event-stream and upload operations' own files, as `Operation/` is the transfer
            // operations'.
            let eventStreamOperation = Self.library.appendingPathComponent("EventStream/EventStreamOperation").standardizedFileURL.path
            let uploadOperation = Self.library.appendingPathComponent("Upload/ResumableUploadOperation").standardizedFileURL.path
            let files = try #require(FileManager.default.enumerator(at: Self.library, includingPropertiesForKeys: nil))
                .compactMap { $0 as? URL }
                .filter {
                    $0.pathExtension == "swift" && !$0.standardizedFileURL.path.hasPrefix(operationFolder)
                        && !$0.standardizedFileURL.path.hasPrefix(eventStreamOperation)
                        && !$0.standardizedFileURL.path.hasPrefix(uploadOperation)
                }
            var openings: [String] = []
            for file in files {
                // `a\n    .state` is `a.state`: a chain split over lines is one chain.
                let code = try Self.code(of: file).replacingOccurrences(of: #"\s*\n\s*\."#, with: ".", options: .regularExpression)
                let whole = NSRange(code.startIndex..., in: code)
                let ownsAState = (code.contains("let state = ") || code.contains("let state: "))
                    && extendsAnOperation.firstMatch(in: code, range: whole) == nil
                for line in code.split(separator: "\n").map(String.init) {
                    // A class's own, through `self`, is not another object's.
                    let probe = ownsAState ? line.replacingOccurrences(of: "self?.state", with: "")
                        .replacingOccurrences(of: "self.state", with: "") : line
                    let reaches = reachingIn.firstMatch(in: probe, range: NSRange(probe.startIndex..., in: probe)) != nil
                    if reaches || line.contains("changingPhase") || (!ownsAState && line.contains("state.withLock")) {
                        openings.append("\(file.lastPathComponent): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
            #expect(files.count > 100, "only \(files.count) files read")
            #expect(openings.isEmpty, "\(openings)")
        }

        /// "`Errors/` … uses `Security/` (`SecurityPolicy.PinningMode`, in `SecurityError`)":
        /// nothing else.
        @Test func errorsUseOnlySecurity() throws {
            let uses = try Self.upwardUses(from: "Errors", to: Self.all(but: ["Security"], besides: "Errors"))
            #expect(uses.isEmpty, "\(uses)")
        }
    }
}
