// swift-tools-version:6.0
import PackageDescription

// Benchmarks live in their own package so the library never depends on what they compare
// it with. Build and run with `Benchmarks/run` (see ../Docs/Performance.md).
let package = Package(
    name: "HTTPOperationsBenchmarks",
    dependencies: [
        .package(name: "HTTPOperations", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The upload workloads' server (uploadsink), on AsyncHTTPClient's SwiftNIO.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // AsyncHTTPClient's TLS, named to give it the benchmark's test CA.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Backends for the `observed` client: logging, metrics and tracing switched on.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // The physical limit of the transport: a plain libcurl multi loop in C, with the
        // options HTTPOperations sets.
        .target(name: "CRawCurl", linkerSettings: [.linkedLibrary("curl")]),
        .executableTarget(
            name: "bench",
            dependencies: [
                "CRawCurl",
                .product(name: "HTTPOperations", package: "HTTPOperations"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The server the upload workloads POST to: reads each whole body, then answers.
        .executableTarget(
            name: "uploadsink",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Issue 15's scale figures: 10,000 slow transfers on one network thread, 1,000 HTTP/2
        // streams (run by Benchmarks/scale, see ../Docs/Reliability.md).
        .executableTarget(
            name: "scale",
            dependencies: [.product(name: "HTTPOperations", package: "HTTPOperations")]
        ),
        // Issue 15's soak: a million mixed requests through one manager, sampled every 10 s
        // (run by Benchmarks/soak).
        .executableTarget(
            name: "soak",
            dependencies: ["CMallocStats", .product(name: "HTTPOperations", package: "HTTPOperations")]
        ),
        // Issue 27's memory figures: heap bytes per waiting operation, stage by stage.
        .executableTarget(
            name: "opcost",
            dependencies: ["CMallocStats", .product(name: "HTTPOperations", package: "HTTPOperations")]
        ),
        // glibc's mallinfo2 for the soak's samples (<malloc.h> is not in Swift's Glibc module).
        .target(name: "CMallocStats"),
    ],
    swiftLanguageModes: [.v6]
)
