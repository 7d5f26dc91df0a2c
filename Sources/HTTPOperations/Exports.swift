// On Linux, URLRequest, URLResponse, HTTPURLResponse and URLCredential live in
// FoundationNetworking. Every public API of this module speaks them, so importing
// HTTPOperations brings them along.
@_exported import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif
