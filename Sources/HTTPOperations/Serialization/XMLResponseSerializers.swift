import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Validates a response and returns an `XMLParser` over its body, for the caller to drive.
///
/// Defaults: status 200–299; content types `application/xml`, `text/xml`. The body is not
/// parsed here; an empty body is no parser.
public struct XMLParserResponseSerializer: ValidatingResponseSerializer, HeadOnlyDecoding {
    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    /// The MIME types that pass validation, compared case-insensitively. Default
    /// `application/xml`, `text/xml`.
    public var acceptableContentTypes: Set<String>? = ["application/xml", "text/xml"]

    /// Creates a serializer with the defaults above.
    public init() {}

    /// Returns `XMLParser(data:)` for the body, with external entities not resolved, without
    /// validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidXML` for a body that is not valid
    ///   UTF-8 (checked before parsing): the parser would crash on it when driven.
    public func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        let bytes: Data
        switch XMLEncodingCheck.parseableBytes(data) {
        case .success(let parseable): bytes = parseable
        case .failure(let problem):
            throw ResponseSerializationError(.invalidXML(detail: problem.description), response: response, data: data)
        }
        let parser = XMLParser(data: bytes)
        // Explicitly, whatever the platform's default: a response must not make us read files.
        parser.shouldResolveExternalEntities = false
        return parser
    }
}

/// Validates a response and parses its body into an `XMLDocument`.
///
/// Defaults: status 200–299; content types `application/xml`, `text/xml`; external entities
/// never loaded. An empty body is no document and no error.
public struct XMLDocumentResponseSerializer: ValidatingResponseSerializer, HeadOnlyDecoding {
    /// The status codes that pass validation. Default 200–299.
    public var acceptableStatusCodes = IndexSet(integersIn: 200..<300)
    /// The MIME types that pass validation, compared case-insensitively. Default
    /// `application/xml`, `text/xml`.
    public var acceptableContentTypes: Set<String>? = ["application/xml", "text/xml"]

    /// Options for `XMLDocument(data:options:)`. They always include
    /// `.nodeLoadExternalEntitiesNever` and never `.nodeLoadExternalEntitiesAlways`.
    public let options: XMLNode.Options

    /// Creates a serializer with `options`.
    ///
    /// External entities are never loaded, whatever `options` say: corelibs Foundation
    /// otherwise parses with libxml2's `XML_PARSE_NOENT`, and a response declaring
    /// `<!ENTITY x SYSTEM "file:///etc/passwd">` would have the file's contents substituted
    /// into the document (XXE).
    public init(options: XMLNode.Options = []) {
        self.options = options.subtracting(.nodeLoadExternalEntitiesAlways).union(.nodeLoadExternalEntitiesNever)
    }

    /// Parses the body, without validating the response.
    ///
    /// The body is checked for well-formedness with `XMLParser` first: on this platform
    /// `XMLDocument(data:)` recovers from malformed input instead of throwing, and crashes on
    /// a document without a root element (`<?xml version="1.0"?>` alone).
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidXML`.
    public func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        let bytes: Data
        switch XMLEncodingCheck.parseableBytes(data) {
        case .success(let parseable): bytes = parseable
        case .failure(let problem):
            throw ResponseSerializationError(.invalidXML(detail: problem.description), response: response, data: data)
        }
        if let problem = WellFormedness.problem(in: bytes) {
            throw ResponseSerializationError(.invalidXML(detail: problem.detail), response: response, data: data,
                                             underlying: problem.parserError)
        }
        do {
            return try XMLDocument(data: bytes, options: options)
        } catch {
            throw ResponseSerializationError(.invalidXML(detail: "\(error)"), response: response, data: data, underlying: error)
        }
    }
}

/// Checks that XML is well-formed: it parses without error, has a root element, and closes
/// every element it opens. (`XMLParser.parse()` alone returns true for `<`.)
final class WellFormedness: NSObject, XMLParserDelegate {
    private var depth = 0
    private var roots = 0

    /// What is wrong with a document: said in words, and the parser's own error when it
    /// raised one (kept as the serialization error's underlying error).
    struct Problem {
        let detail: String
        let parserError: (any Error)?
    }

    /// What is wrong with `data` as XML, or nil when it is well-formed.
    static func problem(in data: Data) -> Problem? {
        let check = WellFormedness()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = check
        let parsed = parser.parse()
        if let error = parser.parserError { return Problem(detail: "\(error)", parserError: error) }
        let detail: String? = if !parsed {
            "the parser stopped"
        } else if check.roots == 0 {
            "there is no root element"
        } else if check.roots > 1 {
            "there is more than one root element"
        } else if check.depth != 0 {
            "an element is not closed"
        } else {
            nil
        }
        return detail.map { Problem(detail: $0, parserError: nil) }
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        if depth == 0 { roots += 1 }
        depth += 1
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
    }
}

/// Refuses bytes that corelibs' XML parsing cannot take safely: invalid UTF-8, and a
/// processing instruction without data.
///
/// On this platform `XMLParser` traps (crashes the process) inside its start-element callback
/// when a name holds invalid UTF-8: measured on this toolchain, 80 of 400 randomly mutated
/// small documents crashed it, and 0 of 600 mutations that stayed valid UTF-8 did. So a body
/// must be valid UTF-8, unless its XML declaration names a single-byte encoding in which
/// every byte is a character.
enum XMLEncodingCheck {
    /// The single-byte encodings a body may declare instead of UTF-8: every byte is a character.
    private static let singleByteEncodings: [String: String.Encoding] = [
        "iso-8859-1": .isoLatin1, "latin1": .isoLatin1, "windows-1252": .windowsCP1252, "us-ascii": .ascii,
    ]

    /// Why a body is not handed to the parser.
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// The bytes to hand corelibs' XML parsing: the body itself when it is valid UTF-8; when
    /// its XML declaration names a single-byte encoding, the body transcoded to UTF-8 here,
    /// with the declaration saying UTF-8. The parser never sees anything but valid UTF-8:
    /// trusting libxml2 to apply the declared encoding was not enough, since it ignores the
    /// declaration when any part of it is malformed (`version=";.0"`, found by FuzzTests) and
    /// then hands the raw bytes on.
    static func parseableBytes(_ data: Data) -> Result<Data, Problem> {
        if let target = processingInstructionWithoutData(in: data) {
            return .failure(Problem(description: "a processing instruction without data (<?\(target)?>), which crashes this platform's XMLParser"))
        }
        if String(validating: data, as: UTF8.self) != nil { return .success(data) }
        let bytes = [UInt8](data)
        guard let declaration = declaration(bytes), let name = declaration.encoding, let range = declaration.encodingValue,
              let encoding = singleByteEncodings[name] else {
            return .failure(Problem(description: "the body is not valid UTF-8 and declares no single-byte encoding"))
        }
        guard let text = String(data: data, encoding: encoding) else {
            return .failure(Problem(description: "the body is not valid \(name)"))
        }
        // Everything up to the end of the declaration is ASCII: the offsets are the same.
        var utf8 = Array(text.utf8)
        utf8.replaceSubrange(range, with: Array("UTF-8".utf8))
        return .success(Data(utf8))
    }

    /// An XML declaration, read strictly by XML 1.0's grammar (§2.8), all ASCII.
    struct Declaration {
        /// The declared encoding, lower-cased.
        var encoding: String?
        /// Where the encoding's name lies in the body.
        var encodingValue: Range<Int>?
    }

    /// The body's XML declaration, or nil when it has none or one that breaks the grammar:
    /// `<?xml` S `version` Eq `"1.`digits`"` (S `encoding` Eq name)? (S `standalone` Eq
    /// `"yes"|"no"`)? S? `?>`.
    static func declaration(_ bytes: [UInt8]) -> Declaration? {
        var index = 0
        func eat(_ token: String) -> Bool {
            let token = Array(token.utf8)
            guard index + token.count <= bytes.count, Array(bytes[index..<(index + token.count)]) == token else { return false }
            index += token.count
            return true
        }
        func spaces() -> Bool {
            let start = index
            while index < bytes.count, [0x20, 0x09, 0x0D, 0x0A].contains(bytes[index]) { index += 1 }
            return index > start
        }
        func equals() -> Bool {
            _ = spaces()
            guard eat("=") else { return false }
            _ = spaces()
            return true
        }
        func quoted(_ allowed: (UInt8) -> Bool) -> Range<Int>? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else { return nil }
            let quote = bytes[index]
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != quote {
                guard allowed(bytes[index]) else { return nil }
                index += 1
            }
            guard index < bytes.count, index > start else { return nil }
            defer { index += 1 }
            return start..<index
        }
        func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

        guard eat("<?xml"), spaces(), eat("version"), equals(),
              let version = quoted({ isDigit($0) || $0 == UInt8(ascii: ".") }),
              version.count > 2, bytes[version.lowerBound] == UInt8(ascii: "1"), bytes[version.lowerBound + 1] == UInt8(ascii: "."),
              !bytes[(version.lowerBound + 2)..<version.upperBound].contains(UInt8(ascii: ".")) else { return nil }
        var declaration = Declaration()
        var mark = index
        if spaces(), eat("encoding") {
            guard equals(), let value = quoted({ isLetter($0) || isDigit($0) || [0x2E, 0x5F, 0x2D].contains($0) }),
                  isLetter(bytes[value.lowerBound]) else { return nil }
            declaration.encodingValue = value
            declaration.encoding = String(decoding: bytes[value], as: UTF8.self).lowercased()
        } else {
            index = mark
        }
        mark = index
        if spaces(), eat("standalone") {
            guard equals(), let value = quoted(isLetter), ["yes", "no"].contains(String(decoding: bytes[value], as: UTF8.self)) else { return nil }
        } else {
            index = mark
        }
        _ = spaces()
        return eat("?>") ? declaration : nil
    }

    /// The target of the first processing instruction with no data (`<?x?>`) outside
    /// comments and CDATA sections, or nil. libxml2 hands such an instruction to `XMLParser`
    /// with a null data pointer, and corelibs' callback reads it as a C string: the process
    /// dies (found by FuzzTests with `<?xml?>`; `<r><?x?></r>` does the same). Valid XML,
    /// but rare in responses, and refused rather than crash.
    static func processingInstructionWithoutData(in data: Data) -> String? {
        // One pass, looking only at what follows a `<`, comparing in place: bodies can be large.
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> String? in
            func starts(_ token: [UInt8], at index: Int) -> Bool {
                index + token.count <= bytes.count && bytes[index..<(index + token.count)].elementsEqual(token)
            }
            func skip(past end: [UInt8], from index: Int) -> Int {
                var index = index
                while index < bytes.count, !(bytes[index] == end[0] && starts(end, at: index)) { index += 1 }
                return index + end.count
            }
            var index = 0
            while index < bytes.count {
                guard bytes[index] == UInt8(ascii: "<") else {
                    index += 1
                    continue
                }
                if starts(Self.commentStart, at: index) {
                    index = skip(past: Self.commentEnd, from: index + Self.commentStart.count)
                } else if starts(Self.cdataStart, at: index) {
                    index = skip(past: Self.cdataEnd, from: index + Self.cdataStart.count)
                } else if starts(Self.instructionStart, at: index) {
                    var end = index + 2
                    while end < bytes.count, ![0x20, 0x09, 0x0D, 0x0A, UInt8(ascii: "?")].contains(bytes[end]) { end += 1 }
                    if starts(Self.instructionEnd, at: end) { return String(decoding: bytes[(index + 2)..<end], as: UTF8.self) }
                    index = skip(past: Self.instructionEnd, from: end)
                } else {
                    index += 1
                }
            }
            return nil
        }
    }

    private static let commentStart = Array("<!--".utf8), commentEnd = Array("-->".utf8)
    private static let cdataStart = Array("<![CDATA[".utf8), cdataEnd = Array("]]>".utf8)
    private static let instructionStart = Array("<?".utf8), instructionEnd = Array("?>".utf8)
}
