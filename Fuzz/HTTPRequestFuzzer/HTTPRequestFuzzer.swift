// A libFuzzer target for HTTPHello's request parser (Scripts/fuzz builds and runs it).
//
// Each input is two control bytes and a byte stream. The stream is parsed twice, once whole and once
// cut into chunks whose sizes come from the first control byte; the second control byte picks the
// limits (the defaults, or small ones that the fuzzer can reach). Besides not trapping, the two runs
// must find the same requests and the same error: where the network cuts a stream must not matter.
//
// Built with `-D FLOW_FUZZING` the file has no `main`, and libFuzzer's drives it. Built without (as
// `swift build` does) it is a program that replays the files or directories it is given, so the seed
// corpus is checked in every build.
import HTTPParsing

#if canImport(Glibc)
import Glibc
#endif

/// What parsing a stream produced.
struct ParseOutcome: Equatable {
    var heads: [HTTPRequestHead] = []
    var error: HTTPRequestError?
    var isFinished = false
    var isBetweenRequests = true
}

/// Parses `stream` in chunks of `chunkSizes` (repeated as needed; 0 is read as 1).
func parse(_ stream: UnsafeRawBufferPointer, limits: HTTPRequestLimits, chunkSizes: [Int]) -> ParseOutcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = ParseOutcome()
    var offset = 0
    var step = 0
    while offset < stream.count {
        let size = min(max(1, chunkSizes[step % chunkSizes.count]), stream.count - offset)
        step += 1
        let chunk = UnsafeRawBufferPointer(rebasing: stream[offset..<offset + size])
        offset += size
        do {
            try parser.consume(chunk) { head in
                guard head.contentLength >= 0, head.contentLength <= limits.maximumBodySize else {
                    fatalError("HTTPRequestFuzzer: a Content-Length outside the limit got through: \(head)")
                }
                outcome.heads.append(head)
                return head.keepsAlive
            }
        } catch {
            guard outcome.error == nil else { fatalError("HTTPRequestFuzzer: a finished parser threw again") }
            outcome.error = error
        }
    }
    outcome.isFinished = parser.isFinished
    // A finished parser reads nothing more: how much of the last body had arrived does not matter.
    outcome.isBetweenRequests = parser.isFinished || parser.isBetweenRequests
    return outcome
}

/// The check run on every input.
func check(_ data: UnsafeRawBufferPointer) {
    guard data.count >= 2 else { return }
    let cutting = Int(data[0])
    let limitsChoice = Int(data[1])
    let stream = UnsafeRawBufferPointer(rebasing: data[2...])
    let limits = limitsChoice & 1 == 0
        ? HTTPRequestLimits()
        : HTTPRequestLimits(
            maximumHeadSize: 16 + limitsChoice, maximumHeaderCount: limitsChoice >> 5,
            maximumBodySize: limitsChoice >> 2)
    let whole = parse(stream, limits: limits, chunkSizes: [stream.count])
    // Chunks of 1 to 8 bytes, in a pattern set by the control byte.
    let sizes = (0..<4).map { 1 + (cutting >> (2 * $0)) & 7 }
    let cut = parse(stream, limits: limits, chunkSizes: sizes)
    guard whole == cut else {
        fatalError("HTTPRequestFuzzer: parsing whole and in chunks of \(sizes) differ:\n\(whole)\n\(cut)")
    }
    if whole.error != nil, !whole.isFinished { fatalError("HTTPRequestFuzzer: an error left the parser reading") }
}

#if FLOW_FUZZING
/// libFuzzer's entry point for programs that keep their own `main` (SwiftPM names every executable's).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum Fuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv) { data, size in
            check(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
    }
}
#else
/// Replays the corpus files and directories named on the command line.
@main
enum ReplayCorpus {
    static func main() {
        var count = 0
        for path in CommandLine.arguments.dropFirst() {
            for file in files(at: path) {
                guard let bytes = read(file) else {
                    print("HTTPRequestFuzzer: cannot read \(file)")
                    exit(1)
                }
                bytes.withUnsafeBytes { check($0) }
                count += 1
            }
        }
        print("HTTPRequestFuzzer: \(count) inputs replayed, no failure")
    }

    /// `path` itself, or the regular files directly inside it if it is a directory.
    static func files(at path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return bytes
    }
}
#endif
