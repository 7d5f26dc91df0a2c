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
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
    ],
    targets: [
        // libcurl, with typed wrappers for its variadic setopt/getinfo calls.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(
            name: "HTTPOperations",
            dependencies: [
                "CCurl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // An in-process HTTP server with fault injection, for the tests and `httpop demo`.
        .target(
            name: "HTTPTestServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
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
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
