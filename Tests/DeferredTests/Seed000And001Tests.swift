// The snippets of shared/seeds/000 and 001 (the same README section, as Markdown and as plain text)
// that use today's names. Adaptations, each forced by Swift itself:
// - `extension FriendsViewController { private var friends: ... }` and `extension FriendsStore { var
//   context: ... }` declare stored properties, which extensions cannot hold: they are class bodies here.
// - `Deferred<Value>` in the view controller needs a `Value`: the class declares `typealias Value`.
// - `/* … */` placeholders are filled in.
// The `IgnoringFuture` snippet uses an old name and lives in DeprecatedNamesTests.swift.
import Deferred
import Dispatch
import Foundation
import Testing

private final class FriendsViewController {
    typealias Value = [Friend]

    // `FriendsViewController` is the only of the `Deferred` in its
    // `Promise` role, and can use it as it pleases.
    private var friends: Deferred<Value>?

    // Now this method can vend a `Future` and not worry about the
    // rules of accessing its private `Deferred`.
    func refreshFriends() -> Future<[Friend]> {
        let friends = fetchFriends(for: jimbob)
        friends.upon(.main) { friends in
            let names = friends.map { $0.name }
            dataSource.array = names
            tableView.reloadData()
        }

        /* Stash the `Deferred<Value>` for defaulting later. */
        self.friends = friends

        return Future(friends)
    }

    func cancelFriends() {
        friends?.fill(with: [])
    }

}

private final class FriendsStore {

    // dependency, injected later on
    var context: NSManagedObjectContext?

    func getLocalFriends(for user: User) -> Future<[Friend]> {
        guard let context = context else {
            // a future can be created with an immediate value, allowing the benefits
            // of Deferred's design even if values are available already (consider a
            // stub object, for instance).
            return Future([])
        }

        let predicate: NSPredicate = NSPredicate(value: true)

        return Friend.findAll(matching: predicate, inContext: context)
    }

}

@Suite("README snippets, seeds 000 and 001")
struct Seed000And001Tests {
    @Test("refreshFriends vends a read-only Future of the fetched friends")
    func refreshFriends() {
        let controller = FriendsViewController()
        let friends = controller.refreshFriends()
        #expect(friends.wait(until: .now() + hangGuard) == jimbobsFriends)
        controller.cancelFriends()
        #expect(friends.peek() == jimbobsFriends)
    }

    @Test("getLocalFriends gives an immediate empty Future without a context, else the store's")
    func getLocalFriends() {
        let store = FriendsStore()
        #expect(store.getLocalFriends(for: jimbob).peek() == [])
        store.context = NSManagedObjectContext()
        #expect(store.getLocalFriends(for: jimbob).peek() == jimbobsFriends)
    }
}
