// Runs one scenario of Flow's I/O (TCP or Unix-socket echo, file writes and reads, file chunks, UDP
// echo, a child's piped output, pipelined HTTP requests through HTTPHello's parser, a name lookup)
// again and again under one kind of injected fault, a seed per run, and prints a line per run: what
// was injected, how the run ended, how many bytes were checked, and any broken promise (a lost,
// duplicated or reordered byte, a failure no caller heard of, a descriptor, handle or future left
// behind). A run that hangs ends the program (status 3).
//
//     FaultProbe available      (1 or 0: whether the calls can be faulted in this build)
//     FaultProbe matrix         (each scenario and the kinds of fault it is swept with)
//     FaultProbe <scenario> <fault> <first seed> <runs>
//     FaultProbe cat            (the child of the process scenario: copies its input to its output)
import CFaultInjection
import CLibUV
import Dispatch
import Flow
import FlowNet
import FlowSystem
import Glibc

// First of all, before libuv allocates anything.
_ = flow_fault_install_allocator()

let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "" {
case "available":
    print("available \(flow_fault_available())")
    exit(0)
case "matrix":
    // The kinds of fault each scenario is swept with: those that reach a call it makes.
    for scenario in Scenario.allCases {
        print("\(scenario.rawValue) \(scenario.faults.map(\.rawValue).joined(separator: " "))")
    }
    exit(0)
case "cat":
    exit(copyInputToOutput())
default:
    break
}
guard arguments.count == 5, let scenario = Scenario(rawValue: arguments[1]),
      let fault = FaultKind(rawValue: arguments[2]),
      let firstSeed = UInt64(arguments[3]), let runs = UInt64(arguments[4])
else {
    print("usage: FaultProbe <\(Scenario.allCases.map(\.rawValue).joined(separator: "|"))> "
          + "<\(FaultKind.allCases.map(\.rawValue).joined(separator: "|"))> <first seed> <runs>")
    exit(2)
}
exit(Sweep(scenario: scenario, fault: fault).run(seeds: firstSeed..<(firstSeed + runs)))
