// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "HTTPOperations",
    products: [
        .library(name: "HTTPOperations", targets: ["HTTPOperations"]),
        .library(name: "HTTPTestServer", targets: ["HTTPTestServer"]),
        .executable(name: "httpop", targets: ["httpop"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // HTTPRequest and HTTPResponse for the second door (the Swift HTTP client API's types).
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // `swift package generate-documentation`: the DocC catalog, built in CI.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // libcurl, with typed wrappers for its variadic setopt/getinfo calls. Its headers are on
        // the compiler's default path and the module map links it; no pkg-config: libcurl 8's
        // libcurl.pc adds `-isystem /usr/include/mit-krb5`, a flag SwiftPM refuses with a warning.
        .systemLibrary(
            name: "CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // rtnetlink for NetworkReachabilityManager: the netlink macros do not import into Swift.
        .target(name: "CNetlink"),
        // The certification path OpenSSL verified (libcurl's TLS library), for pinning: libssl-dev.
        .target(name: "CTLSPath", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // A mutex ThreadSanitizer can see, used only in builds with -DHTTPOPERATIONS_TSAN.
        .target(name: "SanitizerLocks"),
        .target(
            name: "HTTPOperations",
            dependencies: [
                "CCurl",
                "CNetlink",
                "CTLSPath",
                "SanitizerLocks",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Crypto", package: "swift-crypto"),
                // Certificates and SubjectPublicKeyInfo for pinning: parsed, never hand-written DER.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ]
        ),
        // An in-process HTTP server with fault injection, for the tests and `httpop demo`.
        .target(
            name: "HTTPTestServer",
            dependencies: [
                "SanitizerLocks",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                // The upload routes check tus `Upload-Checksum` digests.
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The test server behind TLS, with certificates made in memory: for the security tests.
        .target(
            name: "HTTPTestTLSServer",
            dependencies: [
                "HTTPTestServer",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "httpop",
            dependencies: [
                "HTTPOperations",
                "HTTPTestServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "HTTPOperationsTests",
            dependencies: [
                "HTTPOperations",
                "HTTPTestServer",
                "HTTPTestTLSServer",
                "SanitizerLocks",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
