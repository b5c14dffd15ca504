// swift-tools-version:6.0
import Foundation
import PackageDescription

/// The Swift packages, by their GitHub URL; or, when `TONEARM_PACKAGES` names a folder, from
/// copies there, one folder each (`scripts/build-trixie` makes them for Debian's Swift 6.0, whose
/// package manager cannot read the manifests of today's releases).
let packages: [(url: String, from: Version)] = [
    ("https://github.com/apple/swift-argument-parser", "1.5.0"),
    ("https://github.com/apple/swift-log", "1.6.0"),
    ("https://github.com/apple/swift-nio", "2.80.0"),
    ("https://github.com/apple/swift-system", "1.4.0"),
]
let dependencies: [Package.Dependency] = packages.map { package in
    if let folder = Context.environment["TONEARM_PACKAGES"], !folder.isEmpty {
        return .package(path: folder + "/" + package.url.split(separator: "/").last!)
    }
    return .package(url: package.url, from: package.from)
}

/// libgpiod's API changed wholly from 1.6 (Debian bookworm) to 2 (trixie); TonearmGPIO has a
/// wrapper for each and builds the one for the libgpiod pkg-config finds, with the
/// environment's PKG_CONFIG_PATH (a cross build's), or 1.6 when pkg-config cannot tell.
let libgpiodMajorVersion: Int = {
    let pkgConfig = Process()
    pkgConfig.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    pkgConfig.arguments = ["pkg-config", "--modversion", "libgpiod"]
    let output = Pipe()
    pkgConfig.standardOutput = output
    pkgConfig.standardError = FileHandle.nullDevice
    guard (try? pkgConfig.run()) != nil else { return 1 }
    let version = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    pkgConfig.waitUntilExit()
    guard pkgConfig.terminationStatus == 0 else { return 1 }
    return Int(version.prefix { $0.isNumber }) ?? 1
}()

/// C libraries come from Debian packages; each is wrapped once in a `C<Lib>` target that holds
/// only a modulemap and a shim header.
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

/// How the programs are linked, for their memory (the daemon's peak RSS, `scripts/bench`):
/// - relative relocations packed (RELR, read by glibc 2.36 and later; both Swifts bring lld,
///   which writes them). With the Swift runtime linked in, a position-independent program has
///   about 65,000: as RELA entries they are 1.5 MB the loader reads at every start and the
///   daemon keeps resident, as RELR 13 KB. The programs stay position-independent (ASLR).
/// - no symbol exported: `--static-swift-stdlib` asks for `-export-dynamic`, which made 18,800
///   of the package's symbols dynamic (1.7 MB of tables the loader reads; nothing looks them up).
let programLinking: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic"],
                 .when(platforms: [.linux])),
]

let package = Package(
    name: "Tonearm",
    products: [
        .executable(name: "tonearm", targets: ["tonearm"]),
        .executable(name: "tonearmd", targets: ["tonearmd"]),
    ],
    dependencies: dependencies,
    targets: [
        systemLibrary("CALSA", pkgConfig: "alsa", apt: "libasound2-dev"),
        systemLibrary("CFLAC", pkgConfig: "flac", apt: "libflac-dev"),
        systemLibrary("CFAAD", pkgConfig: "faad2", apt: "libfaad-dev"),
        systemLibrary("CVorbisFile", pkgConfig: "vorbisfile", apt: "libvorbis-dev"),
        systemLibrary("COpusFile", pkgConfig: "opusfile", apt: "libopusfile-dev"),
        systemLibrary("CGPIOD", pkgConfig: "libgpiod", apt: "libgpiod-dev"),
        systemLibrary("CMPG123", pkgConfig: "libmpg123", apt: "libmpg123-dev"),
        systemLibrary("CSoxr", pkgConfig: "soxr", apt: "libsoxr-dev"),
        systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        systemLibrary("CSystemd", pkgConfig: "libsystemd", apt: "libsystemd-dev"),
        systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: "libturbojpeg0-dev"),
        systemLibrary("CPNG", pkgConfig: "libpng16", apt: "libpng-dev"),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        systemLibrary("CDeflate", pkgConfig: "libdeflate", apt: "libdeflate-dev"),
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),  // headers only: loaded with dlopen
        .systemLibrary(name: "CSwiftConcurrency"),  // the Swift runtime's executor hooks, for Swift 6.0

        // Threads, wake-ups, real-time priority and memory locks: POSIX wrapped once.
        .target(name: "TonearmSystem", dependencies: ["CSwiftConcurrency", .product(name: "SystemPackage", package: "swift-system")]),
        // Pure audio building blocks: formats, the SPSC ring, sample conversion, the mixer.
        .target(name: "TonearmAudio"),
        // The decoder seam: one protocol for every format, each format a plug-in (one file per
        // decoder); tags and pictures into one track model.
        .target(name: "TonearmDecoding", dependencies: ["CFAAD", "CFLAC", "CMPG123", "COpusFile", "CVorbisFile", "TonearmAudio", "TonearmSystem"]),
        // Internet radio: http(s) streams through libcurl on a thread of their own, as byte
        // sources for the decoders; ICY metadata; reconnection after a drop.
        .target(name: "TonearmStreams", dependencies: ["CCurl", "TonearmDecoding", "TonearmSystem"]),
        // alsa-lib: one PCM device, negotiated and written to.
        .target(name: "TonearmALSA", dependencies: ["CALSA", "TonearmAudio"]),
        // Decoder thread, output thread and the pipeline between them.
        .target(
            name: "TonearmPlayback",
            dependencies: [
                "CSoxr", "TonearmAudio", "TonearmDecoding", "TonearmALSA", "TonearmSystem", "TonearmStreams",
            ]
        ),
        // The pure logic of buttons, encoders and switches, tested on recorded timelines, and
        // how a board plug-in hands its commands to the control plane. No I/O.
        .target(name: "TonearmBoard", dependencies: ["TonearmControlPlane"]),
        // libgpiod: buttons, encoders and switches on GPIO lines, as a plug-in. Built against
        // libgpiod 2 when pkg-config finds it (LIBGPIOD_V2), against 1.6 otherwise.
        .target(
            name: "TonearmGPIO",
            dependencies: [
                "CGPIOD", "TonearmBoard", "TonearmControlPlane", "TonearmSystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: libgpiodMajorVersion >= 2 ? [.define("LIBGPIOD_V2")] : []
        ),
        // Linux input events (steering-wheel keys, remotes), each device pattern a plug-in.
        .target(
            name: "TonearmInput",
            dependencies: [
                "TonearmBoard", "TonearmControlPlane", "TonearmPlayer", "TonearmSystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Serial displays: termios, and the line, hd44780 and nextion drivers; a display is a
        // plug-in.
        .target(
            name: "TonearmSerial",
            dependencies: [
                "TonearmBoard", "TonearmControlPlane", "TonearmPlayer", "TonearmSystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // A small JSON value type (parse and print) for the CLI and the control protocol.
        .target(name: "TonearmJSON"),
        // Audio-session policy: the category table and one pure function over it.
        .target(name: "TonearmSession"),
        // Pure player logic: queue, transport, remote command center, Now Playing. No I/O.
        .target(name: "TonearmPlayer"),
        // The one vocabulary every client speaks: typed commands and results, the published
        // state, changes by subsystem, the plug-in protocol. No I/O.
        .target(name: "TonearmControlPlane", dependencies: ["TonearmAudio", "TonearmPlayer", "TonearmSession"]),
        // The control socket's JSON-lines protocol: requests, replies, the client.
        .target(
            name: "TonearmControl",
            dependencies: ["TonearmJSON", "TonearmSystem", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // The one network edge: every socket the daemon serves, on one SwiftNIO event loop.
        .target(
            name: "TonearmNetwork",
            dependencies: [
                "TonearmControl", "TonearmJSON", "TonearmSystem",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        // Board profiles: a TOML reader and the daemon's typed configuration.
        .target(name: "TonearmConfig", dependencies: ["TonearmSession", "TonearmControlPlane", "TonearmAudio"]),
        // SQLite: a connection, prepared statements, one error type naming database and statement.
        .target(name: "TonearmSQLite", dependencies: ["CSQLite"]),
        // D-Bus through sd-bus: a connection driven from its descriptor, objects answering
        // method calls, signals; one error type naming the bus, the call and the reason.
        .target(name: "TonearmDBus", dependencies: ["CSystemd"]),
        // Cover art at the size a client asks for: JPEG (libjpeg-turbo, shrunk while it is
        // decoded) and PNG (libpng) in, JPEG out.
        .target(name: "TonearmImage", dependencies: ["CTurboJPEG", "CPNG"]),
        // The web remote: HTTP and one WebSocket, the page embedded in the binary; a plug-in of
        // the control plane.
        .target(
            name: "TonearmWeb",
            dependencies: [
                "TonearmControlPlane", "TonearmControl", "TonearmControlJSON", "TonearmNetwork", "TonearmJSON", "TonearmSystem",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // The page's files, compiled in as bytes: the daemon reads nothing from disk.
            resources: [.embedInCode("Page/index.html"), .embedInCode("Page/page.js"), .embedInCode("Page/page.css")]
        ),
        // MPRIS on D-Bus: plug-ins of the control plane — Tonearm's own player, and the links
        // that follow other programs' players.
        .target(
            name: "TonearmMPRIS",
            dependencies: [
                "TonearmDBus", "TonearmControlPlane", "TonearmDecoding", "TonearmPlayer", "TonearmSystem", "TonearmImage",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Music on disk: directory scans in album order, confinement to the music directory,
        // cover files; the library's index (SQLite), its scanner and watcher; and the player
        // state that survives power loss.
        .target(
            name: "TonearmLibrary",
            dependencies: [
                "CDeflate", "CZlib", "TonearmAudio", "TonearmDecoding", "TonearmJSON", "TonearmControlPlane", "TonearmPlayer", "TonearmSQLite", "TonearmSystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),

        .executableTarget(
            name: "tonearm",
            dependencies: [
                "TonearmPlayback", "TonearmDecoding", "TonearmALSA", "TonearmAudio", "TonearmJSON", "TonearmControl", "TonearmControlPlane",
                "TonearmPlayer", "TonearmSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: programLinking
        ),
        // The control plane spoken in JSON: requests decoded into commands, the state as
        // reports; what the control socket and the web API both speak.
        .target(
            name: "TonearmControlJSON",
            dependencies: [
                "TonearmControlPlane", "TonearmControl", "TonearmJSON", "TonearmAudio", "TonearmPlayer", "TonearmSession", "TonearmSystem",
            ]
        ),
        // The JSON-lines control socket as a plug-in of the control plane.
        .target(
            name: "TonearmControlSocket",
            dependencies: [
                "TonearmControlJSON", "TonearmControlPlane", "TonearmControl", "TonearmNetwork", "TonearmJSON",
                "TonearmSession", "TonearmSystem", .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // Every ALSA program as an audio session: the server the `tonearm` ALSA plugin
        // (ALSA/tonearm_pcm.c) connects to, as a plug-in of the control plane.
        .target(
            name: "TonearmPCMSessions",
            dependencies: [
                "TonearmControlPlane", "TonearmControl", "TonearmNetwork", "TonearmJSON", "TonearmAudio", "TonearmSession", "TonearmPlayer",
                "TonearmSystem", .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The MPD protocol as a plug-in of the control plane: its server, connections and
        // commands, on the edge's transport.
        .target(
            name: "TonearmMPD",
            dependencies: [
                "TonearmControlPlane", "TonearmControl", "TonearmDecoding", "TonearmJSON", "TonearmNetwork", "TonearmPlayer", "TonearmSystem",
                "TonearmAudio", "TonearmSQLite", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The daemon: the control plane's implementation (player core, sessions, engine, saved
        // state), the plug-in registry and the services.
        .target(
            name: "TonearmDaemon",
            dependencies: [
                "TonearmPlayer", "TonearmPlayback", "TonearmALSA", "TonearmAudio", "TonearmControlPlane", "TonearmControlSocket", "TonearmNetwork", "TonearmLibrary",
                "TonearmMPD", "TonearmMPRIS", "TonearmWeb", "TonearmImage", "TonearmConfig", "TonearmSystem", "TonearmSession", "TonearmBoard", "TonearmGPIO",
                "TonearmInput", "TonearmSerial", "TonearmPCMSessions", "TonearmStreams",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(
            name: "tonearmd",
            dependencies: [
                "TonearmDaemon", "TonearmConfig", "TonearmControlPlane", "TonearmNetwork", "TonearmSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: programLinking
        ),

        // Counts heap allocations on the calling thread, to prove the render path makes none.
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),

        .testTarget(name: "TonearmAudioTests", dependencies: ["TonearmAudio", "CAllocationCounter"]),
        .testTarget(name: "TonearmALSATests", dependencies: ["TonearmALSA", "TonearmAudio", "CAllocationCounter"]),
        .testTarget(name: "TonearmPlaybackTests", dependencies: ["TonearmPlayback", "TonearmALSA", "TonearmAudio", "TonearmSystem", "TestSupport"]),
        .testTarget(name: "TonearmDecodingTests", dependencies: ["TonearmDecoding", "TonearmAudio", "TestSupport"]),
        .testTarget(name: "TonearmStreamsTests", dependencies: ["CCurl", "TonearmStreams", "TonearmDecoding", "TonearmAudio", "TestSupport"]),
        .testTarget(
            name: "TonearmSystemTests",
            dependencies: ["TonearmSystem", .product(name: "SystemPackage", package: "swift-system")]
        ),
        .testTarget(name: "TonearmBoardTests", dependencies: ["TonearmBoard", "TonearmControlPlane"]),
        .testTarget(
            name: "TonearmGPIOTests",
            dependencies: ["TonearmGPIO", "TonearmBoard", "TonearmControlPlane", "TonearmSystem", "TestSupport"]
        ),
        .testTarget(
            name: "TonearmInputTests",
            dependencies: ["TonearmInput", "TonearmControlPlane", "TonearmPlayer", "TestSupport"]
        ),
        .testTarget(
            name: "TonearmSerialTests",
            dependencies: ["TonearmSerial", "TonearmControlPlane", "TonearmPlayer", "TestSupport"]
        ),
        .testTarget(name: "TonearmJSONTests", dependencies: ["TonearmJSON"]),
        .testTarget(name: "TonearmPlayerTests", dependencies: ["TonearmPlayer"]),
        .testTarget(name: "TonearmConfigTests", dependencies: ["TonearmConfig", "TonearmControlPlane", "TonearmPlayer", "TonearmAudio"]),
        .testTarget(name: "TonearmSessionTests", dependencies: ["TonearmSession"]),
        .testTarget(
            name: "TonearmPCMSessionsTests",
            dependencies: [
                "TonearmPCMSessions", "TonearmControlPlane", "TonearmSession", "TonearmAudio", "TonearmSystem", "TestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .testTarget(name: "TonearmControlPlaneTests", dependencies: ["TonearmControlPlane", "TonearmPlayer", "TonearmSession"]),
        .testTarget(name: "TonearmControlJSONTests", dependencies: ["TonearmControlJSON", "TonearmControl", "TonearmControlPlane", "TonearmJSON", "TonearmPlayer", "TonearmSession"]),
        .testTarget(
            name: "TonearmDaemonTests",
            dependencies: [
                "TonearmDaemon", "TonearmConfig", "TonearmControlPlane", "TonearmLibrary", "TonearmPlayer", "TonearmSession", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "TonearmControlTests", dependencies: ["TonearmControl", "TonearmJSON", "TestSupport"]),
        .testTarget(
            name: "TonearmNetworkTests",
            dependencies: [
                "TonearmNetwork", "TonearmControl", "TonearmJSON", "TonearmSystem", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "TonearmMPDTests",
            dependencies: [
                "TonearmMPD", "TonearmJSON", "TonearmNetwork", "TonearmControlPlane", "TonearmPlayer", "TonearmAudio", "TestSupport", "CAllocationCounter",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "TonearmLibraryTests", dependencies: ["TonearmLibrary", "TonearmAudio", "TonearmControlPlane", "TonearmDecoding", "TonearmSQLite", "TestSupport"]),
        .testTarget(name: "TonearmDBusTests", dependencies: ["TonearmDBus", "TestSupport"]),
        .testTarget(name: "TonearmMPRISTests", dependencies: ["TonearmMPRIS", "TonearmDBus", "TonearmControlPlane", "TonearmPlayer", "TonearmSystem", "TestSupport"]),
        .testTarget(name: "TonearmImageTests", dependencies: ["TonearmImage"]),
        .testTarget(
            name: "TonearmWebTests",
            dependencies: [
                "TonearmWeb", "TonearmNetwork", "TonearmControlPlane", "TonearmPlayer", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "TonearmIntegrationTests", dependencies: ["TestSupport"]),
        .target(
            name: "TestSupport",
            dependencies: [
                "CFLAC", "TonearmControlPlane", "TonearmSession",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            path: "Tests/TestSupport"
        ),
    ],
    swiftLanguageModes: [.v6]
)

/// Where each module sits, under Sources/ (scripts/check-layout holds them to it):
/// - Core: pure Swift, no I/O — the audio math, the player's state machine, the session rules,
///   the control plane's vocabulary, the board's recognisers, JSON. Imports only the core.
/// - Engine: the audio engine's threads — decoders, streams, the decoder and output threads.
/// - Edges: where the system is touched — system calls, sockets, files, the library's index,
///   configuration, and the C libraries' wrappers (Edges/C, a modulemap and a shim each).
/// - PlugIns: the control plane's clients — MPD, MPRIS, the web page, the control socket, the
///   ALSA programs' sessions, GPIO, input keys, serial displays. None imports another.
/// - Daemon: the actor that holds it all together; Programs: `tonearmd` and `tonearm`.
let layout: [(folder: String, modules: [String])] = [
    ("Core", ["TonearmAudio", "TonearmPlayer", "TonearmSession", "TonearmControlPlane", "TonearmBoard", "TonearmJSON"]),
    ("Engine", ["TonearmPlayback", "TonearmDecoding", "TonearmStreams"]),
    ("Edges", ["TonearmSystem", "TonearmALSA", "TonearmNetwork", "TonearmSQLite", "TonearmDBus", "TonearmImage", "TonearmLibrary",
               "TonearmControl", "TonearmControlJSON", "TonearmConfig"]),
    ("Edges/C", ["CALSA", "CCurl", "CDeflate", "CFAAD", "CFLAC", "CGPIOD", "CMPG123", "COpusFile", "CPNG", "CSQLite", "CSoxr",
                 "CSwiftConcurrency", "CSystemd", "CTurboJPEG", "CVorbisFile", "CZlib"]),
    ("PlugIns", ["TonearmMPD", "TonearmMPRIS", "TonearmWeb", "TonearmControlSocket", "TonearmPCMSessions", "TonearmGPIO", "TonearmInput",
                 "TonearmSerial"]),
    ("Daemon", ["TonearmDaemon"]),
    ("Programs", ["tonearm", "tonearmd"]),
]
for target in package.targets where target.type != .test && target.path == nil {
    guard let folder = layout.first(where: { $0.modules.contains(target.name) })?.folder else {
        fatalError("Package.swift: \(target.name) has no place in the layout")
    }
    target.path = "Sources/\(folder)/\(target.name)"
}

/// `TONEARM_UNIT_TESTS_ONLY` leaves the integration tests out: they drive programs a build root
/// may not have (mpd, a browser, JACK), and building them there would be for nothing.
if let only = Context.environment["TONEARM_UNIT_TESTS_ONLY"], !only.isEmpty {
    package.targets.removeAll { $0.name == "TonearmIntegrationTests" }
}
