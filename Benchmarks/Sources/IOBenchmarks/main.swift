import BenchmarkSupport

// P14-P18: libuv's I/O beyond TCP (UDP, files, processes, names) against SwiftNIO, Foundation and C,
// in a program of its own so that P1-P13 build without Foundation's `Process` and NIO's file system.
//
//   IOBenchmarks <workload> <implementation>     e.g. IOBenchmarks P14 flow
//   IOBenchmarks list

let workloads: [String: [String: Workload]] = [
    "P14": ["flow": UDPWorkloads.flowEcho, "nio": UDPWorkloads.nioEcho],
    "P15-chunks": [
        "flow": FileWorkloads.flowChunks, "nio": FileWorkloads.nioChunks, "foundation": FileWorkloads.foundationChunks,
        "flow-callbacks": FileWorkloads.flowChunksOneByOne,
    ],
    "P15-whole": [
        "flow": FileWorkloads.flowWhole, "nio": FileWorkloads.nioWhole, "foundation": FileWorkloads.foundationWhole,
    ],
    "P16": [
        "flow": ProcessWorkloads.flowSpawn, "foundation": ProcessWorkloads.foundationSpawn,
        "posix-spawn": ProcessWorkloads.posixSpawn,
    ],
    "P17": ["flow": NameWorkloads.flowResolve, "nio": NameWorkloads.nioResolveThroughConnect],
    "P17-connect": ["flow": NameWorkloads.flowResolveThroughConnect, "nio": NameWorkloads.nioResolveThroughConnect],
    "P18-hop": ["flow": HopWorkloads.onLoop, "flow-thread": HopWorkloads.fromThread, "flow-async": HopWorkloads.fromTask],
    "P19-lines": [
        "flow": LineWorkloads.flowLines, "flow-signal": LineWorkloads.flowLineSignal, "nio": LineWorkloads.nioLines,
    ],
    "P19-lines-main-actor": [
        "main-actor": LineWorkloads.mainLoopLines(onMainActor: true),
        "detached": LineWorkloads.mainLoopLines(onMainActor: false),
    ],
]

runWorkloadFromCommandLine(workloads)
