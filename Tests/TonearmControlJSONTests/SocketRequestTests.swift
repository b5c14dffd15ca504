@testable import TonearmControlJSON
import TonearmControl
import TonearmControlPlane
import TonearmJSON
import TonearmPlayer
import XCTest

final class SocketRequestTests: XCTestCase {
    private func request(_ line: String) throws -> ControlRequest {
        let value = try JSONValue.parse(Array(line.utf8))
        return ControlRequest(clientID: 1, id: value["id"] ?? .null, command: value["command"]?.stringValue ?? "", arguments: value)
    }

    private func command(_ line: String) throws -> Command? {
        guard case .command(let command, _)? = try SocketRequest.parse(try request(line)) else { return nil }
        return command
    }

    private func failure(_ line: String) throws -> String? {
        let parsed = try request(line)
        do throws(ArgumentError) {
            _ = try SocketRequest.parse(parsed)
            return nil
        } catch {
            return error.description
        }
    }

    func testTheCommandCenterNamesAndTheOldShortNamesMeanTheSame() throws {
        let pairs: [(String, String)] = [
            (#"{"command":"togglePlayPause"}"#, #"{"command":"toggle"}"#),
            (#"{"command":"nextTrack"}"#, #"{"command":"next"}"#),
            (#"{"command":"previousTrack"}"#, #"{"command":"previous"}"#),
            (#"{"command":"changePlaybackPosition","position":12}"#, #"{"command":"seek","position":12}"#),
            (#"{"command":"skipForward","interval":30}"#, #"{"command":"skip","seconds":30}"#),
            (#"{"command":"skipBackward","interval":15}"#, #"{"command":"skip","seconds":-15}"#),
            (#"{"command":"changeRepeatMode","mode":"all"}"#, #"{"command":"repeat","mode":"all"}"#),
            (#"{"command":"changeShuffleMode","on":true}"#, #"{"command":"shuffle","on":true}"#),
            (#"{"command":"setVolume","percent":40}"#, #"{"command":"volume","percent":40}"#),
            (#"{"command":"pause"}"#, #"{"command":"command","name":"pause"}"#),
            (#"{"command":"nextTrack"}"#, #"{"command":"command","name":"next"}"#),
        ]
        for (name, alias) in pairs {
            let named = try command(name)
            XCTAssertNotNil(named, name)
            XCTAssertEqual(named, try command(alias), alias)
        }
        XCTAssertEqual(try command(#"{"command":"togglePlayPause"}"#), .remote(CommandRequest(.togglePlayPause)))
        XCTAssertEqual(try command(#"{"command":"volumeUp","step":10}"#), .volume(.step(10)))
        XCTAssertEqual(try command(#"{"command":"toggleMute"}"#), .mute(.toggle))
        XCTAssertEqual(try command(#"{"command":"mute","on":true}"#), .mute(.on))
        XCTAssertEqual(try command(#"{"command":"seekForward","phase":"end"}"#), .remote(CommandRequest(.seekForward, scanning: .end)))
        // Without a mode, the command center's name steps through the modes (as a button does).
        XCTAssertEqual(try command(#"{"command":"changeRepeatMode"}"#), .remote(CommandRequest(.changeRepeatMode)))
    }

    func testQueueEdits() throws {
        XCTAssertEqual(try command(#"{"command":"add","paths":["a.flac","b"]}"#), .queue(.add(paths: ["a.flac", "b"], at: nil)))
        XCTAssertEqual(try command(#"{"command":"add","paths":["a.flac"],"position":0}"#), .queue(.add(paths: ["a.flac"], at: 0)))
        XCTAssertEqual(try command(#"{"command":"remove","item":3}"#), .queue(.remove(itemIDs: [3])))
        XCTAssertEqual(try command(#"{"command":"move","item":3,"to":0}"#), .queue(.move(itemID: 3, to: 0)))
        XCTAssertEqual(try command(#"{"command":"playItem","item":3}"#), .queue(.play(itemID: 3)))
        XCTAssertEqual(try command(#"{"command":"clear"}"#), .queue(.clear))
    }

    func testReportsAndUnknownCommands() throws {
        for name in ["status", "queue", "nowPlaying", "doctor", "sessions"] {
            guard case .report(let report)? = try SocketRequest.parse(try request(#"{"command":"\#(name)"}"#)) else {
                return XCTFail(name)
            }
            XCTAssertEqual(report.rawValue, name)
        }
        XCTAssertNil(try SocketRequest.parse(try request(#"{"command":"fly"}"#)))
    }

    func testBadArgumentsAreNamed() throws {
        XCTAssertEqual(try failure(#"{"command":"add","paths":[]}"#), "'paths' must be a non-empty array of strings")
        XCTAssertEqual(try failure(#"{"command":"add","paths":["a",1]}"#), "'paths' must be a non-empty array of strings")
        XCTAssertEqual(try failure(#"{"command":"seek"}"#), "'position' is required (a number)")
        XCTAssertEqual(try failure(#"{"command":"volume","percent":140}"#), "'percent' must be between 0 and 100")
        XCTAssertEqual(try failure(#"{"command":"repeat","mode":"twice"}"#), "'mode' must be off, one or all")
        XCTAssertEqual(try failure(#"{"command":"repeat"}"#), "'mode' is required (a string)")
        XCTAssertEqual(try failure(#"{"command":"shuffle"}"#), "'on' is required (true or false)")
        XCTAssertEqual(try failure(#"{"command":"skip","seconds":"x"}"#), "'seconds' must be a number")
        XCTAssertEqual(try failure(#"{"command":"command","name":"fly"}"#)?.hasPrefix("unknown remote command 'fly'"), true)
        XCTAssertEqual(try failure(#"{"command":"seekForward","phase":"middle"}"#), "'phase' must be begin or end")
        XCTAssertEqual(try failure(#"{"command":"sessionPlay","session":2}"#),
                       "give either 'path' (a FLAC file) or 'format' (raw PCM), not both or neither")
        XCTAssertEqual(try failure(#"{"command":"sessionWrite","session":2,"data":"!!"}"#), "'data' must be base64 (RFC 4648, padded)")
        XCTAssertEqual(try failure(#"{"command":"sessionOpen","category":"loud"}"#)?.hasPrefix("unknown category 'loud'"), true)
    }

    private func library(_ line: String) throws -> LibraryRequest? {
        guard case .library(let request)? = try SocketRequest.parse(try request(line)) else { return nil }
        return request
    }

    func testLibraryRequests() throws {
        guard case .update(let path, let wait)? = try library(#"{"command":"update","path":"A/B","wait":true}"#) else {
            return XCTFail("update")
        }
        XCTAssertEqual(path, "A/B")
        XCTAssertTrue(wait)
        guard case .list(let tag, let filters, let groups)? = try library(
            #"{"command":"list","tag":"album","filters":[{"tag":"ALBUMARTIST","value":"X"}],"group":["date"]}"#) else {
            return XCTFail("list")
        }
        XCTAssertEqual(tag, .album)
        XCTAssertEqual(filters, [TagFilter(.tag(.albumArtist), "X")])
        XCTAssertEqual(groups, [.date])
        guard case .songs(let find)? = try library(#"{"command":"find","filters":[{"tag":"any","value":"x"},{"tag":"base","value":"d"}]}"#),
              case .songs(let search)? = try library(#"{"command":"search","filters":[{"tag":"file","value":"y"}],"offset":5,"limit":10}"#) else {
            return XCTFail("find/search")
        }
        XCTAssertEqual(find, SongQuery([TagFilter(.anyTag, "x"), TagFilter(.base, "d")], matching: .exact, window: 0..<1000))
        XCTAssertEqual(search, SongQuery([TagFilter(.file, "y")], matching: .substring, window: 5..<15))
        guard case .add(let add, let position)? = try library(#"{"command":"searchadd","filters":[{"tag":"title","value":"z"}],"position":2}"#) else {
            return XCTFail("searchadd")
        }
        XCTAssertEqual(add.matching, .substring)
        XCTAssertEqual(position, 2)
        guard case .count(_, .exact, let group)? = try library(#"{"command":"count","group":"genre"}"#) else { return XCTFail("count") }
        XCTAssertEqual(group, .genre)
    }

    func testBadLibraryArgumentsAreNamed() throws {
        XCTAssertEqual(try failure(#"{"command":"list"}"#), "'tag' is required (a string)")
        XCTAssertEqual(try failure(#"{"command":"list","tag":"colour"}"#)?.hasPrefix("unknown tag 'colour' (one of Artist, ArtistSort,"), true)
        XCTAssertEqual(try failure(#"{"command":"find","filters":{"tag":"x"}}"#), "'filters' must be an array of {\"tag\":NAME,\"value\":TEXT}")
        XCTAssertEqual(try failure(#"{"command":"find","filters":[{"tag":"title"}]}"#), "each filter must be {\"tag\":NAME,\"value\":TEXT}")
        XCTAssertEqual(try failure(#"{"command":"find","limit":0}"#), "'limit' must be between 1 and 100000")
        XCTAssertEqual(try failure(#"{"command":"find","offset":-1}"#), "'offset' must be 0 or more")
        XCTAssertEqual(try failure(#"{"command":"list","tag":"album","group":[1]}"#), "'group' must be an array of tag names")
        XCTAssertEqual(try failure(#"{"command":"findadd","position":-2}"#), "'position' must be 0 or more")
    }

    func testSessionCommands() throws {
        XCTAssertEqual(try command(#"{"command":"sessionOpen","category":"playback","remoteCommands":true}"#),
                       .session(.open(SessionSetup(category: .playback), remoteCommands: true)))
        XCTAssertEqual(try command(#"{"command":"sessionDeactivate","session":4,"notifyOthers":true}"#),
                       .session(.deactivate(4, notifyOthers: true)))
        XCTAssertEqual(try command(#"{"command":"sessionWrite","session":4,"data":"AAAA"}"#), .session(.write(4, bytes: [0, 0, 0])))
    }
}
