// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Flow",
    products: [
        .library(name: "Flow", targets: ["Flow"]),
    ],
    targets: [
        // libuv, as the system provides it (Debian: libuv1-dev).
        .systemLibrary(
            name: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"]), .brew(["libuv"])]
        ),
        // Thread-local storage and libdispatch's main-queue hooks, which Swift cannot declare itself.
        .target(name: "CFlowSupport"),
        // The core: event loop, schedulers, futures, disposables, combinators.
        .target(name: "Flow", dependencies: ["CLibUV", "CFlowSupport"]),

        // Programs: `swift run <Name>`.
        .executableTarget(name: "Tour", dependencies: ["Flow"], path: "Examples/Tour"),

        // A child process for the tests that need a real main thread.
        .executableTarget(name: "MainLoopProbe", dependencies: ["Flow"], path: "Tests/Probes/MainLoopProbe"),
        .testTarget(name: "FlowTests", dependencies: ["Flow", "MainLoopProbe"]),
    ],
    swiftLanguageModes: [.v6]
)
