import Synchronization
import TonearmAudio
import TonearmDecoding
import TonearmStreams

extension PlaybackEngine {
    /// The decoder thread ("tonearm-decoder"): the producer loop over the player's queue.
    func runDecoder() {
        var producer = Producer(ring: ring, bell: decoderBell, output: outputBell)
        var decoding = PlayerDecoding(engine: self)
        producer.run(&decoding)
    }

    /// The decoder's commands, oldest first, taken.
    fileprivate func takeCommands() -> [DecoderCommand] {
        commands.withLock { c -> [DecoderCommand] in
            defer { c.removeAll() }
            return c
        }
    }

    fileprivate var hasCommands: Bool { commands.withLock { !$0.isEmpty } }
}

/// The decoder thread's policy: the file being decoded and what follows it, by the control
/// plane's commands (`play`, `stop`, `upcomingChanged`) and `upcoming`. One converter lives as
/// long as a run of files of the same format, so a boundary between them is gapless.
private struct PlayerDecoding: ProducerPolicy {
    let engine: PlaybackEngine
    /// The item being decoded, and its decoder.
    var item: EngineItem?
    var decoder: (any AudioDecoder)? {
        didSet { reportedTagChanges = nil }
    }
    /// The source format of the run the device is set up for.
    var source: StreamFormat?
    /// The `play` the items being decoded follow from.
    var request = 0
    /// Source frames left before the item's end, when it ends before its file does.
    var framesLeft: Int?
    /// The network stream the decoder reads, for an http(s) item.
    var stream: HTTPSource?
    /// The decoder's count of tag changes when a stream's title was last looked for in its tags.
    var reportedTagChanges: Int?

    init(engine: PlaybackEngine) { self.engine = engine }

    var ring: SPSCRing { engine.ring }
    var stopped: Bool { engine.stopRequested.load(ordering: .relaxed) }
    let sleepLimit: Int? = nil

    func needsAttention() -> Bool { stopped || engine.hasCommands }

    mutating func attend(_ producer: inout Producer) -> Bool {
        while !stopped {
            for command in engine.takeCommands() {
                guard carryOut(command, &producer) else { return false }
            }
            if decoder != nil && producer.converter != nil { return true }
            // Nothing to decode until a command comes.
            producer.bell.sleep { needsAttention() }
        }
        return false
    }

    mutating func nextBlock() -> SourceBlock {
        do throws(DecodeError) {
            guard framesLeft != 0, let decoder, let block = try decoder.nextBlock() else { return .ended }
            if stream != nil { reportTitle(decoder) }
            guard let left = framesLeft else { return .samples(block) }
            // An item that ends before its file: the block is cut at the end's frame.
            let channels = decoder.info.format.channels
            let frames = min(block.count / channels, left)
            framesLeft = left - frames
            return .samples(UnsafeBufferPointer(rebasing: block[..<(frames * channels)]))
        } catch {
            return .failed(error)
        }
    }

    /// A stream's tags that change as it plays name what plays now (a chained Ogg stream's next
    /// link): its title goes where an ICY title goes, when it has one. The tags a connection
    /// starts with are left to the ICY title, the playlist's and the station's name.
    private mutating func reportTitle(_ decoder: any AudioDecoder) {
        guard decoder.tagChanges > 0, reportedTagChanges != decoder.tagChanges else { return }
        reportedTagChanges = decoder.tagChanges
        if let title = decoder.info.title, let id = item?.id { engine.radioReported(id, .title(title)) }
    }

    mutating func sourceEnded(_ producer: inout Producer, failure: DecodeError?) -> Bool {
        guard let finished = item else { return true }
        var failure = failure
        if let stream {
            // A command ended the wait for the network: it is carried out next.
            if stream.isCancelled {
                stopDecoding(&producer)
                return true
            }
            // The connection's bytes ran out (or broke off mid-frame): an outage, not an end.
            if failure == nil || stream.atEnd {
                switch reopen(stream) {
                case .cancelled:
                    stopDecoding(&producer)
                    return true
                case .opened(let decoder) where decoder.info.format == source:
                    // The same format: the run and its converter go on.
                    self.decoder = decoder
                    producer.pending = UnsafeBufferPointer(start: nil, count: 0)
                    return true
                case .opened(let decoder):
                    return begin(finished, from: 0, replacing: false, opened: decoder, &producer)
                case .ended(let error):
                    failure = error
                }
            }
        }
        stopDecoding(&producer)
        if let failure {
            fail(finished.id, failure)
            if let next = engine.upcoming(finished.id) { return begin(next, from: 0, replacing: false, &producer) }
            endQueue(&producer)
            return true
        }
        // End of the file: straight on to what follows, gaplessly.
        if let next = engine.upcoming(finished.id) { return begin(next, from: 0, replacing: false, &producer) }
        if let conv = producer.converter {
            let tail = conv.flush()
            if tail.count > 0 {
                guard producer.push(tail, channels: conv.deviceChannels, stopped: { stopped }) else { return false }
            }
        }
        endQueue(&producer)
        return true
    }

    /// False when the engine is shutting down.
    private mutating func carryOut(_ command: PlaybackEngine.DecoderCommand, _ producer: inout Producer) -> Bool {
        switch command {
        case .play(let item, let from, let number):
            request = number
            // The end queued before is not where this play ends: once the cut drops what
            // precedes it, it must not be told as heard.
            engine.timeline.withLock { $0.endOfQueue = nil }
            return begin(item, from: from, replacing: true, &producer)
        case .stop:
            stopDecoding(&producer)
            engine.timeline.withLock { $0.endOfQueue = nil }
            guard producer.awaitCut(ring.cutNow(format: nil), stopped: { stopped }) else { return false }
            engine.timeline.withLock { $0.marks.removeAll() }
            endQueue(announce: false, &producer)
            return true
        case .upcomingChanged:
            // Only matters when the decoder has already moved on to the next item.
            let read = ring.samplesRead
            let (playing, ahead) = engine.timeline.withLock { t -> (PlaybackEngine.Mark?, PlaybackEngine.Mark?) in
                (t.marks.last(where: { $0.ringSample <= read }), t.marks.first(where: { $0.ringSample > read }))
            }
            guard let playing, let ahead else { return true }
            let wanted = engine.upcoming(playing.start.itemID)
            guard wanted?.id != ahead.start.itemID else { return true }
            // Replace it where it begins: what precedes still plays out, and the end queued
            // after it is no longer the end.
            engine.timeline.withLock { $0.endOfQueue = nil }
            let generation = ring.cut(at: ahead.ringSample, format: nil, playsOut: true)
            guard producer.awaitCut(generation, stopped: { stopped }) else { return false }
            engine.timeline.withLock { t in t.marks.removeAll { $0.ringSample >= ahead.ringSample } }
            stopDecoding(&producer)
            source = nil  // a fresh converter: none of the abandoned item's resampler state
            if let wanted { return begin(wanted, from: 0, replacing: false, &producer) }
            endQueue(&producer)
            return true
        }
    }

    /// Opens `item` and queues it after what is written (`replacing` false: a track boundary
    /// that plays out first) or in place of everything not yet heard. False when shutting down.
    private mutating func begin(_ item: EngineItem, from seconds: Double, replacing: Bool,
                                opened: (any AudioDecoder)? = nil, _ producer: inout Producer) -> Bool {
        var next = item
        var position = seconds
        var opened = opened
        while true {
            do throws(DecodeError) {
                let decoder: any AudioDecoder
                if let given = opened {
                    decoder = given
                    opened = nil
                } else {
                    decoder = try open(next)
                }
                let format = decoder.info.format
                // A live stream starts where the station is.
                let frame = stream != nil ? 0 : Int((max(position, next.start) * Double(format.sampleRate)).rounded())
                if frame > 0 { try decoder.seek(toFrame: frame) }
                framesLeft = next.end.map { max(0, Int(($0 * Double(format.sampleRate)).rounded()) - frame) }
                if replacing || format != source {
                    // Finish the old run's resampler tail only when it still plays out.
                    if !replacing, let conv = producer.converter {
                        let tail = conv.flush()
                        if tail.count > 0 {
                            guard producer.push(tail, channels: conv.deviceChannels, stopped: { stopped }) else { return false }
                        }
                    }
                    let generation = replacing ? ring.cutNow(format: format == source ? nil : format)
                                               : ring.cutAtEnd(format: format)
                    guard producer.awaitCut(generation, stopped: { stopped }) else { return false }
                    // A fresh converter for every new run: a flushed resampler cannot be fed
                    // again, and a seek must not carry the old position's filter state.
                    if replacing || format != source || producer.converter == nil {
                        source = format
                        producer.converter = try? StreamConverter(source: format,
                                                                  deviceRate: engine.deviceRate.load(ordering: .acquiring),
                                                                  deviceChannels: engine.deviceChannels.load(ordering: .acquiring),
                                                                  quality: engine.options.resampleQuality)
                    }
                }
                let written = ring.samplesWritten
                let start = ItemStart(itemID: next.id, info: decoder.info, position: Double(frame) / Double(format.sampleRate),
                                      device: engine.currentFormat.load() ?? DeviceFormat(sampleFormat: .s16LE, sampleRate: 0, channels: 0, periodFrames: 0, bufferFrames: 0),
                                      request: request)
                engine.queueEnd.store(Int.max, ordering: .relaxed)
                engine.timeline.withLock { t in
                    if replacing { t.marks.removeAll() }
                    t.markSerial += 1
                    t.marks.append(PlaybackEngine.Mark(serial: t.markSerial, start: start, ringSample: written,
                                                       sourceRate: format.sampleRate,
                                                       deviceRate: engine.deviceRate.load(ordering: .acquiring),
                                                       channels: engine.deviceChannels.load(ordering: .acquiring)))
                    t.endOfQueue = nil
                }
                queueStart(QueuedStart(sample: written, gain: decoder.info.replayGain, albumInOrder: next.albumInOrder), &producer)
                self.item = next
                self.decoder = decoder
                producer.pending = UnsafeBufferPointer(start: nil, count: 0)
                return true
            } catch {
                // A command ended the wait for the station: it is carried out next.
                if stream?.isCancelled == true {
                    stopDecoding(&producer)
                    return true
                }
                fail(next.id, error)
                guard let following = engine.upcoming(next.id) else {
                    if replacing { _ = producer.awaitCut(ring.cutNow(format: nil), stopped: { stopped }) }
                    endQueue(&producer)
                    return true
                }
                next = following
                position = 0
            }
        }
    }

    /// Hands the output where the item just begun starts, so it announces the start when it
    /// gets there; rings it in case it sleeps there already (a seek while paused).
    private func queueStart(_ start: QueuedStart, _ producer: inout Producer) {
        // The queue holds more starts than a read-ahead of anything but tracks a few
        // milliseconds long; for those, wait for the output to take some.
        while !engine.starts.push(start) && !stopped {
            producer.bell.sleep(milliseconds: 5) { stopped }
        }
        producer.output.ring()
    }

    private mutating func stopDecoding(_ producer: inout Producer) {
        item = nil
        decoder = nil
        if stream != nil {
            stream = nil
            _ = engine.reading(nil)
        }
        producer.pending = UnsafeBufferPointer(start: nil, count: 0)
    }

    /// A decoder for `item`: its file, or, for an http(s) URL, the station's stream. A stream
    /// whose connection drops before its first bytes decode is opened on the next connection.
    private mutating func open(_ item: EngineItem) throws(DecodeError) -> any AudioDecoder {
        guard PlaybackEngine.isStreamURL(item.path) else {
            if stream != nil { stream = nil; _ = engine.reading(nil) }
            return try Decoders.open(path: item.path)
        }
        let engine = self.engine
        let id = item.id
        let source = HTTPSource(url: item.path, options: engine.options.stream) { engine.radioReported(id, $0) }
        stream = source
        _ = engine.reading(source)
        do throws(DecodeError) {
            return try Decoders.open(source)
        } catch {
            guard source.atEnd, !source.isCancelled else { throw error }
            switch reopen(source) {
            case .opened(let decoder): return decoder
            case .cancelled: throw error
            case .ended(let failure): throw failure ?? error
            }
        }
    }

    private enum Reopened {
        case opened(any AudioDecoder)
        /// A command wants the thread.
        case cancelled
        /// The stream has ended (nil: a length read to its end) or failed for good.
        case ended(DecodeError?)
    }

    /// Waits out the outage for the stream's next connection (the stream's thread reconnects
    /// with back-off) and opens a decoder on its bytes: they are a stream of their own.
    private func reopen(_ source: HTTPSource) -> Reopened {
        while true {
            do throws(DecodeError) {
                guard try source.nextConnection() else { return .ended(nil) }
                return .opened(try Decoders.open(source))
            } catch {
                if source.isCancelled { return .cancelled }
                // Dropped again before its first frame: the next connection.
                if source.atEnd, !source.state.isFinished { continue }
                return .ended(error)
            }
        }
    }

    private func fail(_ itemID: Int, _ error: DecodeError) {
        engine.timeline.withLock { $0.errors.append((itemID, error)) }
        engine.announce()
    }

    /// Nothing follows what is written: the output idles once it is heard, and, unless the
    /// control plane stopped playback itself, says the queue ended.
    private mutating func endQueue(announce: Bool = true, _ producer: inout Producer) {
        stopDecoding(&producer)
        let end = ring.samplesWritten
        let serial = engine.timeline.withLock { t in
            t.endOfQueue = announce ? end : nil
            if announce { t.endSerial += 1 }
            return t.endSerial
        }
        engine.queueEnd.store(end, ordering: .releasing)
        if announce {
            engine.endsToTell.store(serial, ordering: .releasing)
            // Against the output's check as it falls idle: one of the two sees the other.
            atomicMemoryFence(ordering: .sequentiallyConsistent)
            if engine.outputIdle.load(ordering: .acquiring) && ring.samplesRead >= end { engine.announce() }
        }
        producer.output.wake()
    }
}
