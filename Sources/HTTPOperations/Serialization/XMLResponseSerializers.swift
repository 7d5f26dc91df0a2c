import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Validates a response and returns an `XMLParser` over its body, for the caller to drive.
///
/// Defaults: status 200–299; content types `application/xml`, `text/xml`. The body is not
/// parsed here; an empty body is no parser.
open class XMLParserResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    // @unchecked Sendable: no state of its own beyond the superclass's.

    /// Creates a serializer with the defaults above.
    public override init() {
        super.init()
        acceptableContentTypes = ["application/xml", "text/xml"]
    }

    /// Returns `XMLParser(data:)` for the body, with external entities not resolved, without
    /// validating the response.
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidXML` for a body that is not valid
    ///   UTF-8 (checked before parsing): the parser would crash on it when driven.
    open override func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        if let problem = XMLEncodingCheck.problem(in: data) {
            throw ResponseSerializationError(.invalidXML(detail: problem), response: response, data: data)
        }
        let parser = XMLParser(data: data)
        // Explicitly, whatever the platform's default: a response must not make us read files.
        parser.shouldResolveExternalEntities = false
        return parser
    }
}

/// Validates a response and parses its body into an `XMLDocument`.
///
/// Defaults: status 200–299; content types `application/xml`, `text/xml`; external entities
/// never loaded. An empty body is no document and no error.
open class XMLDocumentResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    // @unchecked Sendable: `options` is set once at init and only read after.

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
        super.init()
        acceptableContentTypes = ["application/xml", "text/xml"]
    }

    /// Parses the body, without validating the response.
    ///
    /// The body is checked for well-formedness with `XMLParser` first: on this platform
    /// `XMLDocument(data:)` recovers from malformed input instead of throwing, and crashes on
    /// a document without a root element (`<?xml version="1.0"?>` alone).
    ///
    /// - Throws: ``ResponseSerializationError`` with `.invalidXML`.
    open override func decode(response: URLResponse?, data: Data?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        if let problem = XMLEncodingCheck.problem(in: data) ?? WellFormedness.problem(in: data) {
            throw ResponseSerializationError(.invalidXML(detail: problem), response: response, data: data)
        }
        do {
            return try XMLDocument(data: data, options: options)
        } catch {
            throw ResponseSerializationError(.invalidXML(detail: "\(error)"), response: response, data: data)
        }
    }
}

/// Checks that XML is well-formed: it parses without error, has a root element, and closes
/// every element it opens. (`XMLParser.parse()` alone returns true for `<`.)
final class WellFormedness: NSObject, XMLParserDelegate {
    private var depth = 0
    private var roots = 0

    /// A description of what is wrong with `data` as XML, or nil when it is well-formed.
    static func problem(in data: Data) -> String? {
        let check = WellFormedness()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = check
        let parsed = parser.parse()
        if let error = parser.parserError { return "\(error)" }
        if !parsed { return "the parser stopped" }
        if check.roots == 0 { return "there is no root element" }
        if check.roots > 1 { return "there is more than one root element" }
        if check.depth != 0 { return "an element is not closed" }
        return nil
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

/// Refuses bytes that corelibs' XML parsing cannot take safely.
///
/// On this platform `XMLParser` traps (crashes the process) inside its start-element callback
/// when a name holds invalid UTF-8: measured on this toolchain, 80 of 400 randomly mutated
/// small documents crashed it, and 0 of 600 mutations that stayed valid UTF-8 did. So a body
/// must be valid UTF-8, unless its XML declaration names a single-byte encoding in which
/// every byte is a character.
enum XMLEncodingCheck {
    private static let singleByteEncodings: Set<String> = ["iso-8859-1", "latin1", "windows-1252", "us-ascii"]

    /// A description of the problem, or nil when the bytes are safe to parse.
    static func problem(in data: Data) -> String? {
        if String(validating: data, as: UTF8.self) != nil { return nil }
        if let declared = declaredEncoding(data), singleByteEncodings.contains(declared) { return nil }
        return "the body is not valid UTF-8 and declares no single-byte encoding"
    }

    /// The `encoding` of the XML declaration, lower-cased.
    private static func declaredEncoding(_ data: Data) -> String? {
        let head = String(decoding: data.prefix(200), as: Unicode.ASCII.self)
        guard head.hasPrefix("<?xml"), let close = head.range(of: "?>"),
              let key = head.range(of: "encoding=", range: head.startIndex..<close.lowerBound) else { return nil }
        let rest = head[key.upperBound...].dropFirst()
        return String(rest.prefix { $0 != "\"" && $0 != "'" }).lowercased()
    }
}
