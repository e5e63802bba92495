// The smallest stand-ins for the app types the README snippets in shared/seeds use. This file, like
// the seed test files, imports only Deferred (and Dispatch/Foundation), as user code would.
import Deferred
import Dispatch
import Foundation
import Synchronization

struct Friend: Sendable, Equatable {
    var name: String
}

struct User: Sendable {
    var id = 1
}

let jimbob = User()

typealias Name = String

/// The friends the stand-in services return.
let jimbobsFriends = [Friend(name: "Ann"), Friend(name: "Bo")]

/// The table's data source.
final class FakeDataSource: Sendable {
    private let storage = Synchronization.Mutex<[String]>([])

    var array: [String] {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// A table view that counts its reloads and lets a test wait for one.
final class FakeTableView: Sendable {
    private let reloads = Atomic<Int>(0)
    let reloaded = DispatchSemaphore(value: 0)

    var reloadCount: Int { reloads.load(ordering: .relaxed) }

    func reloadData() {
        reloads.add(1, ordering: .relaxed)
        reloaded.signal()
    }
}

let dataSource = FakeDataSource()
let tableView = FakeTableView()

func getFriends(forUser user: User) -> [Friend] {
    jimbobsFriends
}

/// The producer the seeds' clients call (the seeds' own producers are tested in
/// DeprecatedNamesTests.swift): friends fetched on a background queue.
func fetchFriends(for user: User) -> Deferred<[Friend]> {
    let friends = Deferred<[Friend]>()
    DispatchQueue.global().async { friends.fill(with: jimbobsFriends) }
    return friends
}

func computeResult() -> Int {
    42
}

/// Core Data's context, reduced to its name.
final class NSManagedObjectContext: Sendable {}

extension Friend {
    static func findAll(
        matching predicate: NSPredicate, inContext context: NSManagedObjectContext
    ) -> Future<[Friend]> {
        Future(value: jimbobsFriends)
    }
}

/// The kinds of remote call the old README's fork–join example makes.
enum Request {
    case Name
}

/// A remote call for one friend's name, answered on a background queue.
func AsynchronousCall(_ request: Request, friend: Friend) -> Deferred<Name> {
    let name = Deferred<Name>()
    DispatchQueue.global().async { name.fill(with: friend.name) }
    return name
}

// MARK: NSURLSession, reduced to the shape the README uses

final class NSURLRequest: Sendable {}

final class NSURLResponse: Sendable {}

final class NSURLSessionDataTask: Sendable {
    private let completion: @Sendable (Data?, NSURLResponse?, (any Error)?) -> Void
    private let cancelled = Atomic<Bool>(false)

    init(completion: @escaping @Sendable (Data?, NSURLResponse?, (any Error)?) -> Void) {
        self.completion = completion
    }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) }

    func resume() {
        DispatchQueue.global().async { [completion] in completion(Data("Ann,Bo".utf8), nil, nil) }
    }

    func cancel() {
        cancelled.store(true, ordering: .relaxed)
    }
}

final class NSURLSession: Sendable {
    func dataTaskWithRequest(
        _ request: NSURLRequest,
        completionHandler: @escaping @Sendable (Data?, NSURLResponse?, (any Error)?) -> Void
    ) -> NSURLSessionDataTask {
        NSURLSessionDataTask(completion: completionHandler)
    }
}

func parseFriends(_ data: Data?, _ response: NSURLResponse?, _ error: (any Error)?) -> [Friend] {
    guard let data else { return [] }
    return String(decoding: data, as: UTF8.self).split(separator: ",").map { Friend(name: String($0)) }
}
