// A libFuzzer target for FlowNet's frame readers: the length-prefixed splitter behind
// `frames(lengthPrefix:maximumLength:)` and the line splitter behind `lines(maximumLength:)`
// (Scripts/fuzz builds and runs it with FUZZ_TARGET=FrameReaderFuzzer).
//
// Each input is three control bytes and a byte stream, as a peer would send it. The first control
// byte picks the reader (lines, or one of the six length prefixes), the second its maximum length
// (Int.max, 0, or a small one), the third how the stream is cut into chunks. The stream is read three
// ways: whole, cut into chunks, and cut into chunks with a new reader taking over after every frame
// from the bytes the last one gave back. Besides not trapping (no peer-controlled length may
// overflow), the three must give the same frames and end the same way, and no frame may be longer
// than the maximum.
//
// Built with `-D FLOW_FUZZING` the file has no `main`, and libFuzzer's drives it. Built without (as
// `swift build` does) it is a program that replays the files or directories it is given.
import FlowNet

#if canImport(Glibc)
import Glibc
#endif

/// What reading a stream produced: the frames, then how it ended.
struct ReadOutcome<Frame: Equatable>: Equatable {
    var frames: [Frame] = []
    /// The error that ended the reading, described; `nil` if it ended cleanly.
    var error: String?
}

/// Reads `stream` in chunks of `chunkSizes` (repeated as needed; 0 is read as 1) with the splitters
/// `makeSplitter` makes: one for the whole stream, or a new one after every frame (`handingOver`).
func read<Splitter: FrameSplitter>(
    _ stream: [UInt8], chunkSizes: [Int], handingOver: Bool, _ makeSplitter: () -> Splitter
) -> ReadOutcome<Splitter.Frame> where Splitter.Frame: Equatable {
    var splitter = makeSplitter()
    var outcome = ReadOutcome<Splitter.Frame>()
    var offset = 0
    var step = 0
    do {
        while offset < stream.count {
            let size = min(max(1, chunkSizes[step % chunkSizes.count]), stream.count - offset)
            step += 1
            splitter.append(Array(stream[offset..<offset + size]))
            offset += size
            while let frame = try splitter.next() {
                outcome.frames.append(frame)
                if handingOver {
                    let unread = splitter.takeUnread()
                    splitter = makeSplitter()
                    if unread.count > 0 { splitter.adopt(unread) }
                }
            }
        }
        if let last = try splitter.finish() { outcome.frames.append(last) }
    } catch {
        outcome.error = String(describing: error)
    }
    return outcome
}

/// Reads `stream` the three ways and checks that they agree.
func compare<Splitter: FrameSplitter>(
    _ stream: [UInt8], cutting: Int, _ makeSplitter: () -> Splitter
) -> ReadOutcome<Splitter.Frame> where Splitter.Frame: Equatable {
    let whole = read(stream, chunkSizes: [max(1, stream.count)], handingOver: false, makeSplitter)
    // Chunks of 1 to 8 bytes, in a pattern set by the control byte.
    let sizes = (0..<4).map { 1 + (cutting >> (2 * $0)) & 7 }
    let cut = read(stream, chunkSizes: sizes, handingOver: false, makeSplitter)
    let handedOver = read(stream, chunkSizes: sizes, handingOver: true, makeSplitter)
    guard whole == cut, cut == handedOver else {
        fatalError("FrameReaderFuzzer: whole, cut in \(sizes), and handed over differ:\n\(whole)\n\(cut)\n\(handedOver)")
    }
    return whole
}

/// The check run on every input.
func check(_ data: [UInt8]) {
    guard data.count >= 3 else { return }
    let maximumLength = data[1] == 0 ? Int.max : data[1] == 1 ? 0 : Int(data[1]) * 3
    let cutting = Int(data[2])
    let stream = Array(data[3...])
    let prefixes: [LengthPrefix] = [
        .uint8, .uint16BigEndian, .uint16LittleEndian, .uint32BigEndian, .uint32LittleEndian, .uint64BigEndian,
    ]
    let choice = Int(data[0]) % (prefixes.count + 1)
    if choice == prefixes.count {
        _ = compare(stream, cutting: cutting) { LineSplitter(maximumLength: maximumLength) }
    } else {
        let outcome = compare(stream, cutting: cutting) {
            LengthPrefixedSplitter(lengthPrefix: prefixes[choice], maximumLength: maximumLength)
        }
        if let long = outcome.frames.first(where: { $0.count > maximumLength }) {
            fatalError("FrameReaderFuzzer: a frame of \(long.count) bytes passed the maximum of \(maximumLength)")
        }
    }
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
            check(Array(UnsafeBufferPointer(start: data, count: size)))
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
                    print("FrameReaderFuzzer: cannot read \(file)")
                    exit(1)
                }
                check(bytes)
                count += 1
            }
        }
        print("FrameReaderFuzzer: \(count) inputs replayed, no failure")
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
