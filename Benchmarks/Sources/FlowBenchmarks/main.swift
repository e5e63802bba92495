import BenchmarkSupport

// One workload for one implementation per process, so that implementations never share a heap or a
// warmed-up runtime; the `run` script alternates them.
//
//   FlowBenchmarks <workload> <implementation>     e.g. FlowBenchmarks P1 flow
//   FlowBenchmarks list

let workloads: [String: [String: Workload]] = [
    "P1": ["flow": FlowWorkloads.promiseMapComplete, "nio": NIOWorkloads.promiseMapComplete],
    "P2": ["flow": FlowWorkloads.chainedMaps, "nio": NIOWorkloads.chainedMaps],
    "P3": ["flow": FlowWorkloads.recursiveFlatMap, "nio": NIOWorkloads.recursiveFlatMap],
    "P3-nio-1M": ["nio": NIOWorkloads.recursiveFlatMapMillionDeep],
    "P4": ["flow": FlowWorkloads.joinPending, "nio": NIOWorkloads.joinPending],
    "P5": [
        "flow": FlowWorkloads.postFromThread, "nio": NIOWorkloads.postFromThread,
        "libuv": ReferenceWorkloads.libuvPostFromThread, "dispatch": ReferenceWorkloads.dispatchPostFromThread,
    ],
    "P5-main": ["flow": FlowWorkloads.postToMainFromThread, "dispatch": FlowWorkloads.postToMainQueueFromThread],
    "P6": [
        "flow": FlowWorkloads.postOnLoop, "nio": NIOWorkloads.postOnLoop, "libuv": ReferenceWorkloads.libuvPostOnLoop,
    ],
    "P7": ["flow": FlowWorkloads.timers, "libuv": ReferenceWorkloads.libuvTimers],
    "P8": [
        "flow": FlowWorkloads.memory, "nio": NIOWorkloads.pendingFutureMemory,
        "libuv": ReferenceWorkloads.libuvPendingTimerMemory,
    ],
    "P11-get-completed": ["flow": ConcurrencyWorkloads.flowGetCompleted, "nio": ConcurrencyWorkloads.nioGetCompleted],
    "P11-get-pending": ["flow": ConcurrencyWorkloads.flowGetPending, "nio": ConcurrencyWorkloads.nioGetPending],
    "P13-flow-to-nio-completed": [
        "flow": BridgeWorkloads.flowToNIOCompleted(async: false), "async": BridgeWorkloads.flowToNIOCompleted(async: true),
    ],
    "P13-flow-to-nio-pending": [
        "flow": BridgeWorkloads.flowToNIOPending(async: false), "async": BridgeWorkloads.flowToNIOPending(async: true),
    ],
    "P13-nio-to-flow-completed": [
        "flow": BridgeWorkloads.nioToFlowCompleted(async: false), "async": BridgeWorkloads.nioToFlowCompleted(async: true),
    ],
    "P13-nio-to-flow-pending": [
        "flow": BridgeWorkloads.nioToFlowPending(async: false), "async": BridgeWorkloads.nioToFlowPending(async: true),
    ],
    "P13-nio-submit": [
        "flow": NIOAdapterWorkloads.submitRoundTrips(flow: true), "nio": NIOAdapterWorkloads.submitRoundTrips(flow: false),
    ],
    "P13-nio-future-map": [
        "flow": NIOAdapterWorkloads.succeededFutureMap(flow: true), "nio": NIOAdapterWorkloads.succeededFutureMap(flow: false),
    ],
    "P11-actor": [
        "flow-loop-from-loop": ConcurrencyWorkloads.actorOnLoopFromLoop,
        "flow-loop-from-pool": ConcurrencyWorkloads.actorOnLoopFromPool,
        "default": ConcurrencyWorkloads.actorOnPool,
    ],
]

runWorkloadFromCommandLine(workloads)
