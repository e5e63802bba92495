// swift-tools-version: 6.0
import PackageDescription

// The library is the package one directory up. SwiftPM names a path dependency after its directory
// (lowercased), so read that name instead of hard-coding the checkout's folder name.
let flowPackage = Context.packageDirectory
    .split(separator: "/").dropLast().last.map { String($0).lowercased() } ?? "flow"

let package = Package(
    name: "FlowBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // P18's reference: LineBasedFrameDecoder.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // P12's reference for signals.
        .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
    ],
    targets: [
        // Counts calls to malloc and friends, and the bytes they hand out, by defining them in the
        // executable (where they take precedence over the C library's) and forwarding to glibc.
        .target(name: "CMallocCounter"),
        // The raw-libuv reference workloads, written in C against libuv directly.
        .target(name: "CLibUVReference", dependencies: ["CMallocCounter"], linkerSettings: [.linkedLibrary("uv")]),
        // Timing, allocation counting and reporting, shared by the benchmark programs.
        .target(
            name: "BenchmarkSupport",
            dependencies: ["CMallocCounter", .product(name: "Flow", package: flowPackage)]
        ),
        // P1-P8, P11, P13: Flow against SwiftNIO, raw libuv and Dispatch; Flow's bridges.
        .executableTarget(
            name: "FlowBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                "CLibUVReference",
                .product(name: "Flow", package: flowPackage),
                .product(name: "FlowNIO", package: flowPackage),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // P9: the Deferred layer's `upon`, in a program of its own so that P1-P8 build without it.
        .executableTarget(
            name: "DeferredBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Deferred", package: flowPackage),
                .product(name: "Flow", package: flowPackage),
            ]
        ),
        // P12: signals against OpenCombine and AsyncStream, in a program of its own.
        .executableTarget(
            name: "SignalBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Flow", package: flowPackage),
                .product(name: "OpenCombine", package: "OpenCombine"),
            ]
        ),
        // P14-P18: UDP, files, processes, names and line framing against SwiftNIO, Foundation and C, in a program of
        // its own so that P1-P13 build without Foundation and NIO's file system.
        .executableTarget(
            name: "IOBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                "CLibUVReference",
                .product(name: "Flow", package: flowPackage),
                .product(name: "FlowNet", package: flowPackage),
                .product(name: "FlowSystem", package: flowPackage),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
            ]
        ),
        // J1-J5's plain-loop anchor: FlowJobs' SQL statements in a C loop straight on sqlite3.
        .target(name: "CSQLiteJobsReference", linkerSettings: [.linkedLibrary("sqlite3")]),
        // J1-J5: FlowJobs' store and worker (Benchmarks/jobs runs them beside the anchors).
        .executableTarget(
            name: "JobsBenchmarks",
            dependencies: [
                "CSQLiteJobsReference",
                .product(name: "Flow", package: flowPackage),
                .product(name: "FlowJobs", package: flowPackage),
            ]
        ),
        // J6-pg: a schedule's tick to its handler's start on FlowJobsPostgres (Benchmarks/jobs-postgres).
        .executableTarget(
            name: "JobsPostgresScheduleBenchmarks",
            dependencies: [
                .product(name: "Flow", package: flowPackage),
                .product(name: "FlowJobs", package: flowPackage),
                .product(name: "FlowJobsPostgres", package: flowPackage),
            ]
        ),
        // J1-pg-J3-pg and the scale rows: FlowJobsPostgres's store and worker (Benchmarks/jobs-postgres runs
        // them beside the anchors), in a program of its own so that the SQLite rows build without libpq.
        .executableTarget(
            name: "JobsPostgresBenchmarks",
            dependencies: [
                .product(name: "Flow", package: flowPackage),
                .product(name: "FlowJobs", package: flowPackage),
                .product(name: "FlowJobsPostgres", package: flowPackage),
            ]
        ),
        // P10-limit's reference: the same keep-alive hello server in C on libuv, one loop.
        .executableTarget(name: "CHTTPHello", linkerSettings: [.linkedLibrary("uv")]),
        // P10's reference: a SwiftNIO HTTP/1.1 hello server on one loop thread.
        .executableTarget(
            name: "NIOHTTPHello",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
