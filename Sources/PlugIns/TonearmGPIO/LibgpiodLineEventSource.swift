import TonearmSystem

// What both libgpiod line sources share. `LibgpiodLineEventSource` itself is written once per
// libgpiod API: LibgpiodLineEventSource+Libgpiod1.swift (1.6) and +Libgpiod2.swift (2.x),
// chosen when the package is built (see GPIOChip.swift).

extension LibgpiodLineEventSource {
    public func now() -> Double { monotonicSeconds() }

    /// The chip a line is on, opened once per name the profile used and kept in `chips` while
    /// its lines are requested, and the line's offset on it.
    static func locate(_ spec: GPIOLineSpec, in chips: inout [String: GPIOChip]) throws(GPIOError) -> (chip: GPIOChip, offset: Int) {
        let chip: GPIOChip
        if let open = chips[spec.chip] {
            chip = open
        } else {
            do throws(GPIOError) {
                chip = try GPIOChip(spec.chip)
            } catch {
                throw error.about(line: spec.line.description)
            }
            chips[spec.chip] = chip
        }
        switch spec.line {
        case .offset(let number):
            try chip.checkLine(offset: number)
            return (chip, number)
        case .named(let name):
            return (chip, try chip.lineOffset(named: name))
        }
    }

    /// An event's time on the monotonic clock, from the kernel's stamp in seconds. Since Linux
    /// 5.7 the kernel stamps edge events with CLOCK_MONOTONIC; older kernels used
    /// CLOCK_REALTIME, which is then far from `readAt`, and the time the event was read stands
    /// in for it.
    static func seconds(stamped at: Double, readAt: Double) -> Double {
        at > readAt + 1 || at < readAt - 60 ? readAt : at
    }

    /// One wait's events: the edges, which were read line after line, interleaved by time (an
    /// encoder's A and B especially), then the lines lost.
    static func inOrder(edges: [LineEvent], lost: [LineEvent]) -> [LineEvent] {
        func time(_ event: LineEvent) -> Double {
            if case .edge(_, _, let at) = event { return at }
            return .infinity
        }
        return edges.sorted { time($0) < time($1) } + lost
    }

    /// The lines of `lost` events.
    static func lines(of lost: [LineEvent]) -> Set<Int> {
        Set(lost.compactMap { event -> Int? in
            if case .lost(let line, _) = event { return line }
            return nil
        })
    }
}
