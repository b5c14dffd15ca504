import TonearmControlPlane
import TonearmPlayer
import TonearmSession
import XCTest

final class ChangeFeedTests: XCTestCase {
    func testASubscriberGetsOnlyWhatItFollowsMergedIntoOneBatch() async {
        let feed = ChangeFeed()
        let subscription = feed.subscribe([.queue, .mixer])
        feed.publish(ChangeBatch(subsystems: [.player]))
        feed.publish(ChangeBatch(subsystems: [.queue]))
        feed.publish(ChangeBatch(subsystems: [.mixer, .options]))
        var iterator = subscription.makeAsyncIterator()
        let batch = await iterator.next()
        XCTAssertEqual(batch?.subsystems, [.queue, .mixer])
        XCTAssertEqual(batch?.publications, [])
    }

    func testPublicationsComeInOrderToPlayerSubscribers() async {
        let feed = ChangeFeed()
        let player = feed.subscribe([.player])
        let queue = feed.subscribe([.queue])
        let first = NowPlayingPublication(reason: .playbackStarted, info: NowPlayingInfo(), isReplacement: true, artworkChanged: false)
        let second = NowPlayingPublication(reason: .seek, info: NowPlayingInfo(elapsed: 3), isReplacement: false, artworkChanged: false)
        feed.publish(ChangeBatch(subsystems: [.player], publications: [first]))
        feed.publish(ChangeBatch(subsystems: [.player, .queue], publications: [second]))
        var iterator = player.makeAsyncIterator()
        let batch = await iterator.next()
        XCTAssertEqual(batch?.publications.map(\.reason), [.playbackStarted, .seek])
        var queueIterator = queue.makeAsyncIterator()
        let queueBatch = await queueIterator.next()
        XCTAssertEqual(queueBatch?.publications, [])
        XCTAssertEqual(queueBatch?.subsystems, [.queue])
    }

    func testNoticesReachEverySubscriber() async {
        let feed = ChangeFeed()
        let subscription = feed.subscribe([.output])
        let notice = Notice.streamFinished(owner: 3, session: 4)
        feed.publish(ChangeBatch(notices: [notice]))
        var iterator = subscription.makeAsyncIterator()
        let batch = await iterator.next()
        XCTAssertEqual(batch?.notices, [notice])
        XCTAssertEqual(notice.owner, 3)
    }

    func testAWaitingSubscriberIsWokenAndFinishEndsIt() async {
        let feed = ChangeFeed()
        let subscription = feed.subscribe(Set(Subsystem.allCases))
        let reader = Task { () -> [Set<Subsystem>] in
            var seen: [Set<Subsystem>] = []
            for await batch in subscription { seen.append(batch.subsystems) }
            return seen
        }
        // Publish once the reader waits; either way it sees the batch before the end.
        feed.publish(ChangeBatch(subsystems: [.library]))
        while feed.subscriberCount == 0 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(20))
        feed.finish()
        let seen = await reader.value
        XCTAssertEqual(seen, [[.library]])
    }

    func testAnUnreadSubscriberKeepsABoundedHistory() async {
        let feed = ChangeFeed()
        let subscription = feed.subscribe([.player])
        for index in 0..<1000 {
            let publication = NowPlayingPublication(reason: .seek, info: NowPlayingInfo(elapsed: Double(index)),
                                                    isReplacement: false, artworkChanged: false)
            feed.publish(ChangeBatch(subsystems: [.player], publications: [publication]))
        }
        var iterator = subscription.makeAsyncIterator()
        let batch = await iterator.next()
        XCTAssertEqual(batch?.publications.count, 64)
        XCTAssertEqual(batch?.publications.last?.info.elapsed, 999)
    }

    func testCancelledSubscriptionsAreForgotten() {
        let feed = ChangeFeed()
        var subscription: ChangeSubscription? = feed.subscribe([.player])
        XCTAssertEqual(feed.subscriberCount, 1)
        subscription?.cancel()
        XCTAssertEqual(feed.subscriberCount, 0)
        subscription = feed.subscribe([.player])
        XCTAssertEqual(feed.subscriberCount, 1)
        subscription = nil
        XCTAssertEqual(feed.subscriberCount, 0)
    }
}
