// swift-tools-version: 6.1
import PackageDescription

// A package of its own, so that the main package's builds (debug, release and the sanitizers' in CI)
// compile neither postgres-nio nor its TLS stack; only an application that enqueues from a
// postgres-nio transaction builds them.
//
// The library is the package two directories up. SwiftPM names a path dependency after its directory
// (lowercased), so read that name instead of hard-coding the checkout's folder name.
let flowPackage = Context.packageDirectory
    .split(separator: "/").dropLast(2).last.map { String($0).lowercased() } ?? "flow"

let package = Package(
    name: "FlowJobsPostgresNIO",
    products: [
        // Enqueues FlowJobs' jobs inside a postgres-nio transaction.
        .library(name: "FlowJobsPostgresNIO", targets: ["FlowJobsPostgresNIO"])
    ],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "FlowJobsPostgresNIO",
            dependencies: [
                .product(name: "FlowJobs", package: flowPackage),
                .product(name: "FlowJobsPostgres", package: flowPackage),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "FlowJobsPostgresNIOTests",
            dependencies: [
                "FlowJobsPostgresNIO",
                .product(name: "Flow", package: flowPackage),
                .product(name: "FlowJobs", package: flowPackage),
                .product(name: "FlowJobsPostgres", package: flowPackage),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
