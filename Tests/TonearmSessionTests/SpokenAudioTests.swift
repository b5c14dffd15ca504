import TonearmSession
import XCTest

/// interruptSpokenAudioAndMixWithOthers: a navigation prompt pauses a podcast and mixes with
/// everything else.
final class SpokenAudioTests: XCTestCase {
    let audiobook: SessionID = 7
    let prompt: [SessionOptions] = [
        [.interruptSpokenAudioAndMixWithOthers],
        [.interruptSpokenAudioAndMixWithOthers, .duckOthers],
    ]

    func testPromptInterruptsThePodcastAndLeavesMusicInAnotherSessionAlone() throws {
        var board = Board()
        try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio, commands: true)
        try board.start(music, owner: player, .playback, options: [.mixWithOthers], commands: true)
        XCTAssertEqual(board.last?.outputs, [podcast: .mixing, music: .mixing])

        let speaking = try board.start(
            navigation, owner: carPlayClient, .playback, mode: .voicePrompt,
            options: [.interruptSpokenAudioAndMixWithOthers])
        XCTAssertEqual(
            speaking.interruptionsBegan,
            [InterruptionBegan(session: podcast, owner: carPlayClient, interrupter: navigation, reason: .spokenAudioInterrupted)])
        XCTAssertEqual(
            speaking.outputs, [podcast: .interruptedSilent, music: .mixing, navigation: .mixing])
        XCTAssertEqual(speaking.session(navigation)?.options, [.mixWithOthers, .interruptSpokenAudioAndMixWithOthers])
        XCTAssertEqual(speaking.nowPlayingOwner, podcast)

        let done = try board.apply(.deactivate(navigation, notifyOthers: true))
        XCTAssertEqual(
            done.interruptionsEnded,
            [InterruptionEnded(session: podcast, owner: carPlayClient, endedBy: navigation, shouldResume: true)])
        XCTAssertEqual(done.outputs, [podcast: .mixing, music: .mixing, navigation: .silent])
    }

    func testMixablePodcastBesideNonMixableMusic() throws {
        var board = Board()
        try board.start(music, owner: player, .playback, commands: true)
        try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio, options: [.mixWithOthers])

        let speaking = try board.start(
            navigation, owner: carPlayClient, .playback, mode: .voicePrompt,
            options: [.interruptSpokenAudioAndMixWithOthers, .duckOthers])
        XCTAssertEqual(
            speaking.interruptionsBegan,
            [InterruptionBegan(session: podcast, owner: carPlayClient, interrupter: navigation, reason: .spokenAudioInterrupted)])
        // The prompt also ducks: the music is lowered, the silent podcast is not "ducked".
        XCTAssertEqual(
            speaking.outputs,
            [music: .duckedBy(navigation), podcast: .interruptedSilent, navigation: .mixing])
        XCTAssertEqual(speaking.nowPlayingOwner, music)

        let done = try board.apply(.deactivate(navigation))
        XCTAssertEqual(done.interruptionsEnded, [])
        XCTAssertEqual(done.outputs, [music: .mixing, podcast: .interruptedSilent, navigation: .silent])
    }

    func testOnePromptInterruptsEverySpokenSessionInSessionOrder() throws {
        for options in prompt {
            var board = Board()
            try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio)
            try board.start(audiobook, owner: phoneClient, .playAndRecord, mode: .spokenAudio, options: [.mixWithOthers])
            let speaking = try board.start(navigation, owner: carPlayClient, .multiRoute, options: options)
            XCTAssertEqual(
                speaking.interruptionsBegan,
                [
                    InterruptionBegan(session: podcast, owner: carPlayClient, interrupter: navigation, reason: .spokenAudioInterrupted),
                    InterruptionBegan(session: audiobook, owner: phoneClient, interrupter: navigation, reason: .spokenAudioInterrupted),
                ], "\(options)")
            XCTAssertEqual(
                speaking.outputs,
                [podcast: .interruptedSilent, audiobook: .interruptedSilent, navigation: .mixing], "\(options)")
        }
    }

    func testOtherModesAndDuckOnlyPromptsDoNotInterruptSpokenAudio() throws {
        // A duck-only prompt lowers the podcast instead of pausing it.
        var board = Board()
        try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio)
        let ducking = try board.start(navigation, owner: carPlayClient, .playback, mode: .voicePrompt, options: [.duckOthers])
        XCTAssertEqual(ducking.interruptionsBegan, [])
        XCTAssertEqual(ducking.outputs, [podcast: .duckedBy(navigation), navigation: .mixing])

        // Mode default, voicePrompt, moviePlayback: not spoken audio.
        for mode in [SessionMode.default, .voicePrompt, .moviePlayback] {
            var board = Board()
            try board.start(music, .playback, mode: mode)
            let speaking = try board.start(
                navigation, owner: carPlayClient, .playback, options: [.interruptSpokenAudioAndMixWithOthers])
            XCTAssertEqual(speaking.interruptionsBegan, [], "\(mode)")
            XCTAssertEqual(speaking.outputs, [music: .mixing, navigation: .mixing], "\(mode)")
        }
    }

    func testSpokenAudioStartedDuringThePromptIsNotInterrupted() throws {
        // Interruptions happen when the interrupter activates, not afterwards.
        var board = Board()
        try board.start(navigation, owner: carPlayClient, .playback, options: [.interruptSpokenAudioAndMixWithOthers])
        let started = try board.start(podcast, owner: carPlayClient, .playback, mode: .spokenAudio)
        XCTAssertEqual(started.interruptionsBegan, [])
        XCTAssertEqual(started.outputs, [navigation: .mixing, podcast: .mixing])
    }

    func testASpokenAudioPromptIsItselfInterruptedByTheNext() throws {
        var board = Board()
        try board.start(navigation, owner: carPlayClient, .playback, mode: .spokenAudio, options: [.interruptSpokenAudioAndMixWithOthers])
        let second = try board.start(chime, owner: phoneClient, .playAndRecord, options: [.interruptSpokenAudioAndMixWithOthers])
        XCTAssertEqual(
            second.interruptionsBegan,
            [InterruptionBegan(session: navigation, owner: carPlayClient, interrupter: chime, reason: .spokenAudioInterrupted)])
    }
}
