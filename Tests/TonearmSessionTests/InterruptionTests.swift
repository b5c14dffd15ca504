import TonearmSession
import XCTest

/// Interruptions, resumption and ducking over sequences of requests, as a car box sees them.
final class InterruptionTests: XCTestCase {
    func testCallInterruptsMusicAndResumesItWhenEndedWithNotify() throws {
        var board = Board()
        try board.start(music, owner: player, .playback, commands: true)
        try board.apply(.open(call, owner: phoneClient, category: .playAndRecord, mode: .voiceChat))

        let ringing = try board.apply(.activate(call))
        XCTAssertEqual(
            ringing.interruptionsBegan,
            [InterruptionBegan(session: music, owner: player, interrupter: call, reason: .nonMixableActivated)])
        XCTAssertEqual(ringing.outputs, [music: .interruptedSilent, call: .mixing])
        XCTAssertEqual(ringing.session(music)?.active, true)
        XCTAssertEqual(ringing.session(music)?.interrupted, true)
        XCTAssertEqual(ringing.session(music)?.interruptedBy, [call])

        let hungUp = try board.apply(.deactivate(call, notifyOthers: true))
        XCTAssertEqual(
            hungUp.interruptionsEnded,
            [InterruptionEnded(session: music, owner: player, endedBy: call, shouldResume: true)])
        XCTAssertEqual(hungUp.interruptionsBegan, [])
        XCTAssertEqual(hungUp.outputs, [music: .mixing, call: .silent])
        XCTAssertEqual(hungUp.session(music)?.interrupted, false)
        XCTAssertEqual(hungUp.session(call)?.active, false)
        XCTAssertEqual(hungUp.session(call)?.activationOrder, nil)
    }

    func testWithoutNotifyMusicStaysInterruptedUntilItsOwnerActivatesIt() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(call, owner: phoneClient, .playAndRecord, mode: .voiceChat)

        let hungUp = try board.apply(.deactivate(call))
        XCTAssertEqual(hungUp.interruptionsEnded, [])
        XCTAssertEqual(hungUp.outputs, [music: .interruptedSilent, call: .silent])
        XCTAssertEqual(hungUp.session(music)?.interrupted, true)
        XCTAssertEqual(hungUp.session(music)?.interruptedBy, [])

        // The listener presses play: the player activates its session again.
        let resumed = try board.apply(.activate(music))
        XCTAssertEqual(resumed.interruptionsBegan, [])
        XCTAssertEqual(resumed.interruptionsEnded, [])
        XCTAssertEqual(resumed.outputs, [music: .mixing, call: .silent])
        // Activated again: more recent than every active session (the call's order was freed).
        XCTAssertEqual(resumed.session(music)?.activationOrder, 2)
    }

    func testActivatingAnInterruptedSessionInterruptsItsInterrupter() throws {
        // No priorities: the latest non-mixable activation wins, as between two apps on iOS.
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(call, owner: phoneClient, .playAndRecord)

        let decision = try board.apply(.activate(music))
        XCTAssertEqual(
            decision.interruptionsBegan,
            [InterruptionBegan(session: call, owner: phoneClient, interrupter: music, reason: .nonMixableActivated)])
        XCTAssertEqual(decision.outputs, [music: .mixing, call: .interruptedSilent])
        XCTAssertEqual(decision.session(music)?.interruptedBy, [])
        XCTAssertEqual(decision.session(music)?.activationOrder, 3)
        XCTAssertEqual(decision.session(call)?.interruptedBy, [music])
    }

    func testActivatingASoundingSessionChangesNothing() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(chime, .ambient)
        let before = board.sessions
        let decision = try board.apply(.activate(music))
        XCTAssertEqual(decision.sessions, before)
        XCTAssertEqual(decision.interruptionsBegan, [])
        XCTAssertEqual(decision.session(music)?.activationOrder, 1)
    }

    func testDeactivatingAnInactiveSessionChangesNothing() throws {
        var board = Board()
        try board.apply(.open(music, owner: player, category: .playback))
        let decision = try board.apply(.deactivate(music, notifyOthers: true))
        XCTAssertEqual(decision.sessions, [SessionState(id: music, owner: player, category: .playback)])
        XCTAssertEqual(decision.interruptionsEnded, [])
    }

    /// Music, then a navigation prompt that ducks, then a call; the prompt ends first.
    func testMusicNavigationPromptAndCall() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        XCTAssertEqual(board.last?.outputs, [music: .mixing])

        let prompt = try board.start(
            navigation, owner: carPlayClient, .playback, mode: .voicePrompt, options: [.duckOthers])
        XCTAssertEqual(prompt.interruptionsBegan, [])
        XCTAssertEqual(prompt.outputs, [music: .duckedBy(navigation), navigation: .mixing])
        XCTAssertEqual(prompt.nowPlayingOwner, music)

        let ringing = try board.start(call, owner: phoneClient, .playAndRecord, mode: .voiceChat)
        XCTAssertEqual(
            ringing.interruptionsBegan,
            [InterruptionBegan(session: music, owner: player, interrupter: call, reason: .nonMixableActivated)])
        // The prompt mixes (duckOthers implies mixWithOthers) and ducks the call.
        XCTAssertEqual(
            ringing.outputs,
            [music: .interruptedSilent, navigation: .mixing, call: .duckedBy(navigation)])
        XCTAssertEqual(ringing.nowPlayingOwner, music)

        let promptDone = try board.apply(.deactivate(navigation, notifyOthers: true))
        XCTAssertEqual(promptDone.interruptionsEnded, [])
        XCTAssertEqual(promptDone.outputs, [music: .interruptedSilent, navigation: .silent, call: .mixing])

        let hungUp = try board.apply(.deactivate(call, notifyOthers: true))
        XCTAssertEqual(
            hungUp.interruptionsEnded,
            [InterruptionEnded(session: music, owner: player, endedBy: call, shouldResume: true)])
        XCTAssertEqual(hungUp.outputs, [music: .mixing, navigation: .silent, call: .silent])
        XCTAssertEqual(hungUp.nowPlayingOwner, music)
    }

    /// The same three, but the call ends while the prompt still speaks: music resumes ducked.
    func testMusicResumesDuckedWhileThePromptStillSpeaks() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(navigation, owner: carPlayClient, .playback, mode: .voicePrompt, options: [.duckOthers])
        try board.start(call, owner: phoneClient, .playAndRecord, mode: .voiceChat)

        let hungUp = try board.apply(.deactivate(call, notifyOthers: true))
        XCTAssertEqual(
            hungUp.interruptionsEnded,
            [InterruptionEnded(session: music, owner: player, endedBy: call, shouldResume: true)])
        XCTAssertEqual(hungUp.outputs, [music: .duckedBy(navigation), navigation: .mixing, call: .silent])

        let promptDone = try board.apply(.deactivate(navigation))
        XCTAssertEqual(promptDone.outputs, [music: .mixing, navigation: .silent, call: .silent])
    }

    func testTwoDuckersBothDuckTheMusicAndEachOther() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(navigation, owner: carPlayClient, .playback, options: [.duckOthers])
        let both = try board.start(call, owner: phoneClient, .playAndRecord, options: [.duckOthers])
        XCTAssertEqual(
            both.outputs,
            [music: .duckedBy(navigation, call), navigation: .duckedBy(call), call: .duckedBy(navigation)])
        let one = try board.apply(.deactivate(navigation))
        XCTAssertEqual(one.outputs, [music: .duckedBy(call), navigation: .silent, call: .mixing])
    }

    /// Music is interrupted by a podcast, both by a call: music resumes only when neither holds it.
    func testAnInterruptionEndsOnlyWhenNoInterrupterIsLeft() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio, commands: true)
        XCTAssertEqual(board.state(music)?.interruptedBy, [podcast])

        let ringing = try board.start(call, owner: phoneClient, .playAndRecord)
        // Music was already interrupted: no second "began", but the call holds it too.
        XCTAssertEqual(
            ringing.interruptionsBegan,
            [InterruptionBegan(session: podcast, owner: carPlayClient, interrupter: call, reason: .nonMixableActivated)])
        XCTAssertEqual(ringing.session(music)?.interruptedBy, [podcast, call])
        XCTAssertEqual(ringing.session(podcast)?.interruptedBy, [call])

        let hungUp = try board.apply(.deactivate(call, notifyOthers: true))
        XCTAssertEqual(
            hungUp.interruptionsEnded,
            [InterruptionEnded(session: podcast, owner: carPlayClient, endedBy: call, shouldResume: true)])
        XCTAssertEqual(hungUp.outputs, [music: .interruptedSilent, podcast: .mixing, call: .silent])
        XCTAssertEqual(hungUp.session(music)?.interruptedBy, [podcast])

        let podcastDone = try board.apply(.deactivate(podcast, notifyOthers: true))
        XCTAssertEqual(
            podcastDone.interruptionsEnded,
            [InterruptionEnded(session: music, owner: player, endedBy: podcast, shouldResume: true)])
        XCTAssertEqual(podcastDone.outputs, [music: .mixing, podcast: .silent, call: .silent])
    }

    func testTheLastInterrupterToLeaveDecidesWhetherToResume() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio)
        try board.start(call, owner: phoneClient, .playAndRecord)
        XCTAssertEqual(board.state(music)?.interruptedBy, [podcast, call])

        // The podcast was interrupted too; it leaves without notifying.
        let podcastDone = try board.apply(.deactivate(podcast))
        XCTAssertEqual(podcastDone.interruptionsEnded, [])
        XCTAssertEqual(podcastDone.session(music)?.interruptedBy, [call])
        XCTAssertEqual(podcastDone.session(podcast)?.interrupted, false)
        XCTAssertEqual(podcastDone.session(podcast)?.interruptedBy, [])

        let hungUp = try board.apply(.deactivate(call, notifyOthers: true))
        XCTAssertEqual(
            hungUp.interruptionsEnded,
            [InterruptionEnded(session: music, owner: player, endedBy: call, shouldResume: true)])
        XCTAssertEqual(hungUp.outputs, [music: .mixing, podcast: .silent, call: .silent])
    }

    func testClosingAnActiveInterrupterDoesNotResumeAnyone() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(call, owner: phoneClient, .playAndRecord)
        let closed = try board.apply(.close(call))
        XCTAssertEqual(closed.sessions.map(\.id), [music])
        XCTAssertEqual(closed.interruptionsEnded, [])
        XCTAssertEqual(closed.outputs, [music: .interruptedSilent])
        XCTAssertEqual(closed.session(music)?.interruptedBy, [])
        XCTAssertEqual(closed.nowPlayingOwner, music)
    }

    func testClosingADuckerRestoresTheOthers() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(navigation, owner: carPlayClient, .playback, options: [.duckOthers])
        let closed = try board.apply(.close(navigation))
        XCTAssertEqual(closed.outputs, [music: .mixing])
    }

    func testRecordInterruptsNonMixablePlaybackButNotMixableSessions() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(chime, owner: carPlayClient, .ambient)
        try board.start(navigation, owner: carPlayClient, .playback, options: [.mixWithOthers])
        let recording = try board.start(recorder, owner: phoneClient, .record)
        XCTAssertEqual(
            recording.interruptionsBegan,
            [InterruptionBegan(session: music, owner: player, interrupter: recorder, reason: .nonMixableActivated)])
        XCTAssertEqual(
            recording.outputs,
            [music: .interruptedSilent, chime: .mixing, navigation: .mixing, recorder: .silent])
        XCTAssertEqual(recording.session(recorder)?.active, true)
    }

    func testSetCategoryOnASoundingSessionAppliesAtOnce() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.start(navigation, owner: carPlayClient, .playback, options: [.duckOthers])
        XCTAssertEqual(board.last?.outputs, [music: .duckedBy(navigation), navigation: .mixing])

        // Still mixing, no longer ducking.
        let mixing = try board.apply(.setCategory(navigation, .playback, options: [.mixWithOthers]))
        XCTAssertEqual(mixing.outputs, [music: .mixing, navigation: .mixing])
        XCTAssertEqual(mixing.interruptionsBegan, [])

        // Options are not sticky: plain playback is non-mixable and interrupts the music.
        let solo = try board.apply(.setCategory(navigation, .playback))
        XCTAssertEqual(
            solo.interruptionsBegan,
            [InterruptionBegan(session: music, owner: player, interrupter: navigation, reason: .nonMixableActivated)])
        XCTAssertEqual(solo.outputs, [music: .interruptedSilent, navigation: .mixing])
        XCTAssertEqual(solo.session(navigation)?.activationOrder, 2)
    }

    func testSetCategoryOnAnInactiveOrInterruptedSessionInterruptsNobody() throws {
        var board = Board()
        try board.start(music, .playback, commands: true)
        try board.apply(.open(navigation, owner: carPlayClient, category: .ambient))
        let inactive = try board.apply(.setCategory(navigation, .playback))
        XCTAssertEqual(inactive.interruptionsBegan, [])
        XCTAssertEqual(inactive.outputs, [music: .mixing, navigation: .silent])

        try board.start(call, owner: phoneClient, .playAndRecord)
        let interrupted = try board.apply(.setCategory(music, .multiRoute))
        XCTAssertEqual(interrupted.interruptionsBegan, [])
        XCTAssertEqual(interrupted.outputs, [music: .interruptedSilent, navigation: .silent, call: .mixing])
    }

    /// A recorder interrupted by a chime player that left silently is later held by a call
    /// too; the call's notifying deactivation resumes it, as the last interrupter to leave.
    func testStaleInterruptionIsEndedByTheNextNotifyingInterrupter() throws {
        var board = Board()
        try board.start(music, owner: player, .playback)
        try board.apply(.open(podcast, owner: carPlayClient, category: .soloAmbient))
        try board.apply(.open(recorder, owner: phoneClient, category: .record))

        let recording = try board.apply(.activate(recorder))
        XCTAssertEqual(
            recording.interruptionsBegan,
            [InterruptionBegan(session: music, owner: player, interrupter: recorder, reason: .nonMixableActivated)])
        let solo = try board.apply(.activate(podcast))
        XCTAssertEqual(
            solo.interruptionsBegan,
            [InterruptionBegan(session: recorder, owner: phoneClient, interrupter: podcast, reason: .nonMixableActivated)])
        XCTAssertEqual(solo.session(music)?.interruptedBy, [recorder, podcast])

        let soloDone = try board.apply(.deactivate(podcast))
        XCTAssertEqual(soloDone.session(music)?.interruptedBy, [recorder])
        XCTAssertEqual(soloDone.session(recorder)?.interruptedBy, [])
        XCTAssertEqual(soloDone.session(recorder)?.interrupted, true)

        let ringing = try board.start(call, owner: phoneClient, .playAndRecord)
        XCTAssertEqual(ringing.interruptionsBegan, [])
        XCTAssertEqual(ringing.session(music)?.interruptedBy, [recorder, call])
        XCTAssertEqual(ringing.session(recorder)?.interruptedBy, [call])

        let hungUp = try board.apply(.deactivate(call, notifyOthers: true))
        XCTAssertEqual(
            hungUp.interruptionsEnded,
            [InterruptionEnded(session: recorder, owner: phoneClient, endedBy: call, shouldResume: true)])
        XCTAssertEqual(hungUp.session(music)?.interruptedBy, [recorder])

        let recorderDone = try board.apply(.deactivate(recorder, notifyOthers: true))
        XCTAssertEqual(
            recorderDone.interruptionsEnded,
            [InterruptionEnded(session: music, owner: player, endedBy: recorder, shouldResume: true)])
        XCTAssertEqual(
            recorderDone.outputs,
            [music: .mixing, podcast: .silent, recorder: .silent, call: .silent])
    }
}
