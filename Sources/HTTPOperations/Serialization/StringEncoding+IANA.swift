import Foundation

extension String.Encoding {
    /// The encoding an IANA charset name (a `Content-Type` charset) stands for, for the
    /// charsets servers actually send. nil for names it does not know.
    init?(ianaCharsetName name: String) {
        switch name.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) {
        case "utf-8", "utf8": self = .utf8
        case "us-ascii", "ascii": self = .ascii
        case "iso-8859-1", "latin1", "iso_8859-1": self = .isoLatin1
        case "iso-8859-2", "latin2": self = .isoLatin2
        case "windows-1250", "cp1250": self = .windowsCP1250
        case "windows-1251", "cp1251": self = .windowsCP1251
        case "windows-1252", "cp1252": self = .windowsCP1252
        case "windows-1253", "cp1253": self = .windowsCP1253
        case "windows-1254", "cp1254": self = .windowsCP1254
        case "utf-16": self = .utf16
        case "utf-16be": self = .utf16BigEndian
        case "utf-16le": self = .utf16LittleEndian
        case "utf-32": self = .utf32
        case "utf-32be": self = .utf32BigEndian
        case "utf-32le": self = .utf32LittleEndian
        case "shift_jis", "shift-jis", "sjis": self = .shiftJIS
        case "euc-jp": self = .japaneseEUC
        case "iso-2022-jp": self = .iso2022JP
        case "macintosh", "mac": self = .macOSRoman
        default: return nil
        }
    }
}
