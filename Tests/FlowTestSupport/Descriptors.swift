import Foundation

/// The targets of this process's open descriptors (`/proc/self/fd`): paths, `socket:[N]`, `pipe:[N]`.
public func openDescriptorTargets() -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
}
