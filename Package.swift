// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Flow",
    products: [
        .library(name: "Flow", targets: ["Flow"]),
        .library(name: "FlowTimers", targets: ["FlowTimers"]),
        .library(name: "FlowTesting", targets: ["FlowTesting"]),
        // Deferred's product held two modules, `Deferred` and `Task`: so does this one.
        .library(name: "Deferred", targets: ["Deferred", "Task"]),
        .library(name: "FlowNet", targets: ["FlowNet"]),
        .library(name: "FlowSystem", targets: ["FlowSystem"]),
        // Bridges to the Swift server ecosystem: products of their own, so that `import Flow` alone
        // builds none of SwiftNIO, swift-service-lifecycle or swift-log.
        .library(name: "FlowNIO", targets: ["FlowNIO"]),
        .library(name: "FlowServiceLifecycle", targets: ["FlowServiceLifecycle"]),
        .library(name: "FlowLogging", targets: ["FlowLogging"]),
        .library(name: "FlowMetrics", targets: ["FlowMetrics"]),
        // Durable jobs on an embedded SQLite store: a product of its own, so that `import Flow` alone
        // builds and links no SQLite.
        .library(name: "FlowJobs", targets: ["FlowJobs"]),
        // The PostgreSQL store of durable jobs, on libpq: a product of its own, so that `import FlowJobs`
        // alone builds and links no libpq.
        .library(name: "FlowJobsPostgres", targets: ["FlowJobsPostgres"]),
        // `swift run flow-jobs`: lists, inspects, retries, cancels, discards and purges a job database's jobs.
        .executable(name: "flow-jobs", targets: ["flow-jobs"]),
    ],
    dependencies: [
        // `swift package generate-documentation` for the DocC catalogs.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Property-based tests of the combinators against a reference model.
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // The ecosystem bridges (FlowNIO, FlowServiceLifecycle, FlowLogging, FlowMetrics) and the examples.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // FlowJobs: the trace of an enqueue carried to each attempt of the job.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // Command lines of the examples.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // libuv, as the system provides it (Debian: libuv1-dev).
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"]), .brew(["libuv"])]
        ),
        // SQLite, as the system provides it (Debian: libsqlite3-dev), for FlowJobs' embedded store.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // libpq, as the system provides it (Debian: libpq-dev), for FlowJobsPostgres.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // Thread-local storage and libdispatch's main-queue hooks, which Swift cannot declare itself.
        .target(name: "CFlowSupport"),
        // The core: event loop, schedulers, futures, disposables, combinators.
        .target(name: "Flow", dependencies: ["CLibUV", "CFlowSupport"]),
        // Timers on the loop: delays, timeouts, periodic work, retry backoff.
        .target(name: "FlowTimers", dependencies: ["Flow"]),
        // Test support: a scheduler on a virtual clock.
        .target(name: "FlowTesting", dependencies: ["Flow"]),
        // Big Nerd Ranch's Deferred API on top of Flow's schedulers.
        .target(name: "Deferred", dependencies: ["Flow"]),
        // `import Task`, as Deferred code writes it: the task API of `Deferred`, under Deferred's module name.
        .target(name: "Task", dependencies: ["Deferred"]),
        // TCP on the loop: listen, accept, connect, read, write with back-pressure.
        .target(name: "FlowNet", dependencies: ["Flow", "CLibUV"]),
        // SwiftNIO futures and loops as Flow futures and schedulers, and the other way round.
        .target(
            name: "FlowNIO",
            dependencies: [
                "Flow",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Flow loops and servers as swift-service-lifecycle services.
        .target(
            name: "FlowServiceLifecycle",
            dependencies: ["Flow", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]
        ),
        // Flow's diagnostics through a swift-log `Logger`.
        .target(name: "FlowLogging", dependencies: ["Flow", .product(name: "Logging", package: "swift-log")]),
        // A loop's lag, queued work, open handles and live futures through swift-metrics, once started.
        .target(
            name: "FlowMetrics", dependencies: ["Flow", .product(name: "CoreMetrics", package: "swift-metrics")]
        ),

        // The operating system on the loop: OS signals, child processes, files, thread-pool work.
        // Uses FlowNet's stream connections for a child's pipes.
        .target(name: "FlowSystem", dependencies: ["Flow", "FlowNet", "CLibUV"]),

        // Durable jobs: the job's life, the store protocol, the SQLite store, the worker.
        .target(
            name: "FlowJobs",
            dependencies: [
                "Flow", "FlowTimers", "CSQLite", .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),

        // Durable jobs on PostgreSQL: libpq driven by the loop, the store, its schema.
        .target(
            name: "FlowJobsPostgres",
            dependencies: ["Flow", "FlowNet", "FlowJobs", "CLibPQ", "CLibUV"]
        ),

        // Programs: `swift run <Name>`.
        .executableTarget(
            name: "Tour",
            dependencies: [
                "Flow", "FlowTimers", "Deferred", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Tour"
        ),
        // What the examples' command lines share: `--log-level`, port validation. Not a product.
        .target(
            name: "ExampleSupport",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/ExampleSupport"
        ),
        .executableTarget(
            name: "EchoServer",
            dependencies: [
                "Flow", "FlowNet", "FlowSystem", "FlowLogging",
                "ExampleSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/EchoServer"
        ),
        // HTTPHello's request parser, in a library of its own so that the fuzzer (Fuzz/) can link it.
        .target(name: "HTTPParsing", path: "Examples/HTTPParsing"),
        .executableTarget(
            name: "HTTPHello",
            dependencies: [
                "Flow", "FlowNet", "FlowSystem", "HTTPParsing", "FlowLogging",
                "ExampleSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/HTTPHello"
        ),
        .executableTarget(
            name: "ServiceGroupServer",
            dependencies: [
                "Flow", "FlowNet", "FlowTimers", "FlowServiceLifecycle", "FlowLogging",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "ExampleSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/ServiceGroupServer"
        ),
        .executableTarget(
            name: "RetryJob",
            dependencies: [
                "Flow", "FlowNet", "FlowTimers", "FlowLogging",
                "ExampleSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/RetryJob"
        ),
        .executableTarget(
            name: "JobRunner",
            dependencies: [
                "Flow", "FlowJobs", "FlowJobsPostgres", "FlowSystem", "FlowTimers",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/JobRunner"
        ),
        // The job database's command-line tool, `swift run flow-jobs` (a product: see above).
        .executableTarget(
            name: "flow-jobs",
            dependencies: ["Flow", "FlowJobs", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/flow-jobs"
        ),
        .executableTarget(
            name: "Supervisor",
            dependencies: [
                "Flow", "FlowSystem", "FlowTimers", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Supervisor"
        ),

        // Issue #37's multi-process crash test: a controller, a driver and worker processes (Scripts/jobs-crash-test).
        .executableTarget(
            name: "JobsCrashProbe",
            dependencies: ["Flow", "FlowJobs", "FlowJobsPostgres", "FlowSystem", "CSQLite"],
            path: "Tests/Probes/JobsCrashProbe"
        ),

        // A libFuzzer target for HTTPParsing (Scripts/fuzz); a plain build replays the seed corpus.
        .executableTarget(name: "HTTPRequestFuzzer", dependencies: ["HTTPParsing"], path: "Fuzz/HTTPRequestFuzzer"),
        // The same for FlowNet's frame readers (length prefixes and lines), which peers feed.
        .executableTarget(name: "FrameReaderFuzzer", dependencies: ["FlowNet"], path: "Fuzz/FrameReaderFuzzer"),

        // A child process for the tests that need a real main thread.
        .executableTarget(name: "MainLoopProbe", dependencies: ["Flow"], path: "Tests/Probes/MainLoopProbe"),
        .executableTarget(name: "AsyncMainProbe", dependencies: ["Flow"], path: "Tests/Probes/AsyncMainProbe"),
        // Issue #38: work sent from the main loop to elsewhere delivers back before `run()` returns.
        .executableTarget(
            name: "RunReturnProbe", dependencies: ["Flow", "FlowNet", "FlowSystem", "Deferred"],
            path: "Tests/Probes/RunReturnProbe"
        ),
        // Each stopping misuse of Docs/MisuseMatrix.md, run by the tests from debug and release builds.
        .executableTarget(
            name: "MisuseProbe", dependencies: ["Flow", "Deferred", "FlowNet", "FlowMetrics"], path: "Tests/Probes/MisuseProbe"),
        // Issue #30: libuv's allocator and the system calls libuv makes, failed on purpose from a seed;
        // linked only into FaultProbe, whose runs Tests/FlowReliabilityTests/FaultSweepTests sweeps.
        .target(name: "CFaultInjection", dependencies: ["CLibUV"], path: "Tests/FaultInjection"),
        .executableTarget(
            name: "FaultProbe",
            dependencies: ["Flow", "FlowNet", "FlowSystem", "HTTPParsing", "CFaultInjection"],
            path: "Tests/Probes/FaultProbe"
        ),
        // What the test targets share: loop runners with leak and hang checks, the live-futures trait,
        // example processes. A plain target, not a product.
        .target(name: "FlowTestSupport", dependencies: ["Flow", "CLibUV"], path: "Tests/FlowTestSupport"),
        .testTarget(
            name: "FlowTests",
            dependencies: ["Flow", "FlowTesting", "FlowTestSupport", "MainLoopProbe", "AsyncMainProbe"]
        ),
        // Allocations per operation (P1, P2, P4, P8, posts, NIO code on a Flow loop), counted by a malloc
        // of the test executable's own (Tests/AllocationCounting), with exact thresholds.
        .target(name: "CAllocationCounting", path: "Tests/AllocationCounting"),
        .testTarget(
            name: "FlowAllocationTests",
            dependencies: [
                "Flow", "FlowTestSupport", "CAllocationCounting", "FlowNIO",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "FlowTimersTests", dependencies: ["FlowTimers", "FlowTesting", "Flow", "FlowTestSupport"]),
        .testTarget(name: "DeferredTests", dependencies: ["Deferred", "Flow", "FlowTestSupport"]),
        .testTarget(
            name: "FlowReliabilityTests",
            dependencies: [
                "Flow", "FlowTesting", "FlowTimers", "Deferred", "FlowNet", "EchoServer", "MisuseProbe",
                "FlowTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "FlowNIOTests",
            dependencies: [
                "FlowNIO", "Flow", "FlowTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "FlowServiceLifecycleTests",
            dependencies: [
                "FlowServiceLifecycle", "Flow", "FlowNet", "ServiceGroupServer", "FlowTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FlowLoggingTests",
            dependencies: ["FlowLogging", "Flow", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "FlowMetricsTests",
            dependencies: [
                "FlowMetrics", "Flow", "FlowTestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "FlowNetTests",
            dependencies: [
                "FlowNet", "Flow", "EchoServer", "HTTPHello", "HTTPParsing", "RetryJob", "Tour", "FlowTestSupport",
                "RunReturnProbe",
            ]
        ),
        .testTarget(
            name: "FlowJobsTests",
            dependencies: [
                "FlowJobs", "FlowJobsPostgres", "Flow", "FlowTimers", "FlowTesting", "FlowTestSupport", "CSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The job tool and the JobRunner example, run as processes on databases the tests prepare.
        .testTarget(
            name: "FlowJobsToolTests",
            dependencies: ["FlowJobs", "Flow", "FlowTestSupport", "flow-jobs", "JobRunner"]
        ),
        .testTarget(
            name: "FlowSystemTests",
            dependencies: ["FlowSystem", "FlowNet", "Flow", "EchoServer", "Supervisor", "FlowTestSupport"]
        ),

        // Issue #38: every callback-taking API called from `@MainActor` code with a callback that
        // mutates main-actor state. Swift 6 mode, and CI fails on a warning: compiling clean is the test.
        .testTarget(
            name: "FlowSwift6CallbackTests",
            dependencies: ["Flow", "FlowTimers", "FlowNet", "FlowSystem", "Deferred"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),

        // The drop-in promise, checked as users meet it: code written the way Flow and Deferred users
        // write it (captured `var`s mutated in callbacks, defaulted arguments), in Swift 5 mode.
        .testTarget(
            name: "FlowCompatibilityTests",
            dependencies: ["Flow"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "DeferredCompatibilityTests",
            dependencies: ["Deferred", "Task", "Flow"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
