// Tonearm's web remote: one WebSocket for what the daemon reports, POST /api for what the
// page asks. Everything shown comes from the daemon's events; the only clock here moves the
// seek bar between them.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const ui = {
    connection: $('connection'), output: $('output'), toast: $('toast'),
    tokenForm: $('token-form'), token: $('token'), tokenCancel: $('token-cancel'), tokenWrong: $('token-wrong'),
    coverBox: $('cover-box'), cover: $('cover'), title: $('title'), artist: $('artist'), album: $('album'),
    seek: $('seek'), elapsed: $('elapsed'), remaining: $('remaining'),
    playPause: $('play-pause'), previous: $('previous'), next: $('next'), repeat: $('repeat'), shuffle: $('shuffle'),
    volume: $('volume'), volumeValue: $('volume-value'),
    queue: $('queue'), queueEmpty: $('queue-empty'), queueSummary: $('queue-summary'), clear: $('clear'),
    search: $('search'), searchResults: $('search-results'), searchNote: $('search-note'),
    library: $('library'), libraryPath: $('library-path'), libraryList: $('library-list'), libraryNote: $('library-note'),
    libraryState: $('library-state'),
    playlists: $('playlists'), playlistsEmpty: $('playlists-empty'), sessions: $('sessions'), muteState: $('mute-state'),
  };
  const trackBox = ui.title.parentElement;

  // ---------------------------------------------------------------- small helpers

  const ICONS = {
    add: '<path d="M12 5v14M5 12h14"/>',
    remove: '<path d="M6.5 6.5l11 11M17.5 6.5l-11 11"/>',
    up: '<path d="M6 15l6-6 6 6"/>',
    down: '<path d="M6 9l6 6 6-6"/>',
    chevron: '<path d="M9.5 6l6 6-6 6"/>',
  };

  function icon(name) {
    const span = document.createElement('span');
    span.innerHTML = `<svg viewBox="0 0 24 24" aria-hidden="true" class="stroke ${name}">${ICONS[name]}</svg>`;
    return span.firstChild;
  }

  // An element with attributes (`dataset`, `class`, properties) and children (text or nodes).
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'dataset') Object.assign(node.dataset, value);
      else if (key === 'class') node.className = value;
      else if (key in node && typeof value !== 'string') node[key] = value;
      else node.setAttribute(key, value === true ? '' : value);
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function iconButton(className, label, iconName) {
    return el('button', { type: 'button', class: `icon-button ${className}`, 'aria-label': label }, icon(iconName));
  }

  function formatTime(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds)) return '';
    const whole = Math.max(0, Math.floor(seconds));
    const h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), s = whole % 60;
    const ss = String(s).padStart(2, '0');
    return h ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
  }

  function setText(node, text) {
    const value = text === null || text === undefined ? '' : String(text);
    if (node.textContent !== value) node.textContent = value;
  }

  function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

  // A tag of a library song: a string, or the first of several.
  function tag(song, name) {
    const value = song.tags && song.tags[name];
    return Array.isArray(value) ? value[0] : value;
  }

  function baseName(path) {
    const name = String(path).split('/').pop();
    return name.replace(/\.[^.]+$/, '') || name;
  }

  let toastTimer = 0;
  function toast(message, kind) {
    ui.toast.textContent = message;
    ui.toast.className = `toast ${kind || 'error'}`;
    ui.toast.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { ui.toast.hidden = true; }, kind === 'info' ? 2500 : 4500);
  }

  // ---------------------------------------------------------------- the API

  // With [web] token set, the page logs in once (POST /login): the daemon answers with a
  // session cookie the browser keeps to itself and sends with every request, the WebSocket's
  // and the covers' too. The token is kept nowhere in the page.
  let tokenWaiters = null;

  // Resolves with true once the daemon took a token, false when the form is dismissed. One
  // form for however many requests were refused meanwhile.
  function logIn() {
    ui.tokenWrong.hidden = true;
    ui.tokenForm.hidden = false;
    ui.token.focus();
    if (!tokenWaiters) tokenWaiters = [];
    return new Promise((resolve) => tokenWaiters.push(resolve));
  }

  function settleToken(loggedIn) {
    ui.tokenForm.hidden = true;
    const waiters = tokenWaiters || [];
    tokenWaiters = null;
    waiters.forEach((resolve) => resolve(loggedIn));
    if (loggedIn) reconnectNow();
  }

  ui.tokenForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = ui.token.value.trim();
    ui.token.value = '';
    let response;
    try {
      response = await fetch('/login', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token }), cache: 'no-store',
      });
    } catch (error) {
      setText(ui.tokenWrong, 'The daemon cannot be reached.');
      ui.tokenWrong.hidden = false;
      return;
    }
    if (response.ok) {
      settleToken(true);
      return;
    }
    let reply = null;
    try { reply = await response.json(); } catch (error) { /* say the status */ }
    setText(ui.tokenWrong, response.status === 401 ? 'That token was refused.'
      : (reply && reply.error && reply.error.message) || `The daemon answered HTTP ${response.status}`);
    ui.tokenWrong.hidden = false;
    ui.token.focus();
  });
  ui.tokenCancel.addEventListener('click', () => settleToken(false));

  const STATUS_TEXT = {
    disabled: 'Not available right now',
    noSuchContent: 'That item is no longer there',
    noActionableNowPlayingItem: 'Nothing is playing',
    commandFailed: 'The command failed',
  };

  // One request of the control protocol. Answers { ok, result } or { ok: false, message };
  // never throws.
  async function api(request) {
    const headers = { 'Content-Type': 'application/json' };
    let response;
    try {
      response = await fetch('/api', { method: 'POST', headers, body: JSON.stringify(request), cache: 'no-store' });
    } catch (error) {
      return { ok: false, message: 'The daemon cannot be reached' };
    }
    if (response.status === 401) {
      if (!await logIn()) return { ok: false, message: 'No token given', quiet: true };
      return api(request);
    }
    let reply = null;
    try { reply = await response.json(); } catch (error) { /* not JSON: say the status */ }
    if (!reply) return { ok: false, message: `The daemon answered HTTP ${response.status}` };
    if (!reply.ok) return { ok: false, message: (reply.error && reply.error.message) || `HTTP ${response.status}` };
    return { ok: true, result: reply.result };
  }

  // A command: its failure, or a status other than success, shown in the toast.
  async function command(name, args) {
    const answer = await api(Object.assign({ command: name }, args));
    if (!answer.ok) {
      if (!answer.quiet) toast(answer.message);
      return null;
    }
    const status = answer.result && answer.result.status;
    if (typeof status === 'string' && status !== 'success') toast(STATUS_TEXT[status] || status);
    return answer.result;
  }

  async function addToQueue(request, what) {
    const result = await command(request.command, request);
    if (!result) return;
    const skipped = (result.skipped || []).length;
    if (typeof result.added === 'number') {
      const text = result.added ? `Added ${what || plural(result.added, 'track', 'tracks')}` : 'Nothing was added';
      toast(skipped ? `${text}; ${skipped} skipped (${result.skipped[0].reason})` : text, result.added ? 'info' : 'error');
    }
  }

  // ---------------------------------------------------------------- the WebSocket

  let socket = null;
  let retryDelay = 500;
  let retryTimer = 0;

  function setConnection(open) {
    ui.connection.dataset.state = open ? 'open' : 'closed';
    document.body.dataset.connection = open ? 'open' : 'closed';
    setText(ui.connection, open ? 'connected' : 'reconnecting…');
  }

  function connect() {
    clearTimeout(retryTimer);
    retryTimer = 0;
    const url = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws`;
    const ws = new WebSocket(url);
    let opened = false;
    socket = ws;
    ws.onopen = () => {
      opened = true;
      retryDelay = 500;
      setConnection(true);
    };
    ws.onmessage = (message) => {
      let event;
      try { event = JSON.parse(message.data); } catch (error) { return; }
      const handler = HANDLERS[event.event];
      if (handler && event.data) handler(event.data);
    };
    ws.onclose = async () => {
      if (socket !== ws) return;
      socket = null;
      setConnection(false);
      // Back off while the daemon is away: 0.5 s, 1 s, 2 s, 4 s, then every 5 s.
      retryTimer = setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 5000);
      // A refused upgrade looks like any failure to a page: ask whether it was the token
      // (once logged in, settleToken connects again at once).
      if (!opened && !tokenWaiters) {
        try {
          const probe = await fetch('/api/status', { cache: 'no-store' });
          if (probe.status === 401) logIn();
        } catch (error) { /* the daemon is away: the retry above */ }
      }
    };
  }

  function reconnectNow() {
    if (!socket && retryTimer) {
      retryDelay = 500;
      connect();
    }
  }
  window.addEventListener('online', reconnectNow);
  document.addEventListener('visibilitychange', () => { if (!document.hidden) reconnectNow(); });

  // ---------------------------------------------------------------- now playing

  let status = null;
  let receivedAt = 0;
  let statusSeq = 0;

  // The position now: the last reported one, moved on at the reported rate.
  function position(now) {
    if (!status) return 0;
    const rate = status.state === 'playing' ? Number(status.rate) || 0 : 0;
    let seconds = (Number(status.elapsed) || 0) + rate * (now - receivedAt) / 1000;
    if (typeof status.duration === 'number') seconds = Math.min(seconds, status.duration);
    return Math.max(0, seconds);
  }

  function enabled(name) { return Boolean(status && status.commands && status.commands[name]); }

  function applyStatus(data) {
    status = data;
    receivedAt = performance.now();
    seekHold = null;
    const playing = data.state === 'playing';
    const idle = data.state === 'stopped' && !data.title;

    setText(ui.title, data.title || (idle ? 'Not playing' : 'Unknown title'));
    setText(ui.artist, data.artist);
    setText(ui.album, data.album);
    trackBox.dataset.track = data.title || '';
    document.title = data.title ? `${data.title}${data.artist ? ` — ${data.artist}` : ''} · Tonearm` : 'Tonearm';

    const action = playing ? 'pause' : 'play';
    ui.playPause.dataset.state = data.state;
    ui.playPause.setAttribute('aria-label', playing ? 'Pause' : 'Play');
    ui.playPause.disabled = !enabled(action);
    ui.previous.disabled = !enabled('previousTrack');
    ui.next.disabled = !enabled('nextTrack');

    const repeat = data.repeat || 'off';
    ui.repeat.dataset.mode = repeat;
    ui.repeat.setAttribute('aria-pressed', String(repeat !== 'off'));
    ui.repeat.setAttribute('aria-label', `Repeat: ${repeat === 'one' ? 'this track' : repeat === 'all' ? 'the queue' : 'off'}`);
    ui.repeat.disabled = !enabled('changeRepeatMode');
    ui.shuffle.setAttribute('aria-pressed', String(Boolean(data.shuffle)));
    ui.shuffle.setAttribute('aria-label', data.shuffle ? 'Shuffle: on' : 'Shuffle: off');
    ui.shuffle.disabled = !enabled('changeShuffleMode');

    const duration = typeof data.duration === 'number' && data.duration > 0 ? data.duration : 0;
    ui.seek.max = String(duration);
    ui.seek.disabled = !duration || !enabled('changePlaybackPosition');

    ui.volume.disabled = false;
    if (!volumeHeld()) showVolume(data.volume);

    showOutput(data);
    showCover();
    if (data.library) applyLibrary(data.library);
    followTrack(data);

    renderPosition(performance.now(), true);
    if (playing) startClock();
    statusSeq += 1;
    document.body.dataset.statusSeq = String(statusSeq);
  }

  function showOutput(data) {
    const heard = data.output || 'ok';
    ui.output.hidden = heard === 'ok';
    if (heard === 'ok') return;
    const error = data.device && data.device.error;
    ui.output.replaceChildren(`Output: ${heard}`, error ? el('small', null, error) : null);
  }

  // ---- the cover: preloaded, swapped in only once decoded, so a track change never flickers.

  const ART_STEPS = [128, 256, 512, 1024, 2048];
  let coverWanted = '';

  function artSize() {
    const shown = ui.coverBox.clientWidth || 320;
    const pixels = shown * (window.devicePixelRatio || 1);
    return ART_STEPS.find((step) => step >= pixels) || ART_STEPS[ART_STEPS.length - 1];
  }

  function showCover() {
    const artwork = status && status.artwork;
    const size = artSize();
    const placeholder = `/art/placeholder?size=${size}`;
    const url = artwork ? `/art/${encodeURIComponent(artwork.id)}?size=${size}` : placeholder;
    if (url === coverWanted) return;
    const alt = artwork ? `Cover of ${status.album || status.title || 'this track'}` : '';
    // A picture the daemon cannot give: the placeholder instead.
    preload(url, alt, url === placeholder ? null : () => preload(placeholder, '', null));
  }

  function preload(url, alt, failed) {
    coverWanted = url;
    const image = new Image();
    image.src = url;
    image.decode().then(() => {
      if (coverWanted !== url) return;
      ui.cover.src = url;
      ui.cover.alt = alt;
    }, () => {
      if (coverWanted === url && failed) failed();
    });
  }

  let resizeTimer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (status) showCover(); }, 250);
  });

  // ---- the seek bar: moves by itself between events.

  let frame = 0;
  let lastWhole = -1;
  let lastPixel = -1;
  let lastWrite = 0;
  let dragging = false;
  let seekHold = null;

  // Every frame computes the position; the page is touched only when the thumb moves by a
  // pixel, the clock by a second, or 100 ms went by (for data-elapsed): cheap on a kiosk.
  function renderPosition(now, force) {
    const seconds = position(now);
    const duration = Number(ui.seek.max) || 0;
    let shown = seconds;
    if (dragging) shown = Number(ui.seek.value);
    else if (seekHold && now < seekHold.until) shown = seekHold.position;
    const pixel = duration ? Math.round((shown / duration) * ui.seek.clientWidth) : 0;
    const whole = Math.floor(shown);
    if (!force && pixel === lastPixel && whole === lastWhole && now - lastWrite < 100) return;
    lastPixel = pixel;
    lastWrite = now;
    ui.seek.dataset.elapsed = seconds.toFixed(2);
    if (!dragging) ui.seek.value = String(shown);
    ui.seek.style.setProperty('--p', duration ? `${(shown / duration) * 100}%` : '0%');
    if (whole !== lastWhole || force) {
      lastWhole = whole;
      setText(ui.elapsed, formatTime(shown));
      setText(ui.remaining, duration ? `\u2212${formatTime(duration - whole)}` : '');
      ui.seek.setAttribute('aria-valuetext', duration ? `${formatTime(shown)} of ${formatTime(duration)}` : formatTime(shown));
    }
  }

  function tick(now) {
    frame = 0;
    if (seekHold && now >= seekHold.until) seekHold = null;
    renderPosition(now);
    const moving = status && status.state === 'playing' && Number(status.rate) > 0;
    if (moving || dragging || seekHold) frame = requestAnimationFrame(tick);
  }

  function startClock() {
    if (!frame) frame = requestAnimationFrame(tick);
  }

  // While a finger or the mouse holds the thumb, the bar shows where it is, not the playback.
  ui.seek.addEventListener('pointerdown', () => { dragging = true; });
  ui.seek.addEventListener('input', () => {
    dragging = true;
    startClock();
  });
  const release = () => setTimeout(() => { dragging = false; }, 0);
  ui.seek.addEventListener('pointerup', release);
  ui.seek.addEventListener('pointercancel', release);
  ui.seek.addEventListener('change', () => {
    dragging = false;
    const target = Number(ui.seek.value);
    seekHold = { position: target, until: performance.now() + 1500 };
    startClock();
    command('changePlaybackPosition', { position: target });
  });

  // ---- transport, modes, volume

  ui.playPause.addEventListener('click', () => {
    command(status && status.state === 'playing' ? 'pause' : 'play');
  });
  ui.previous.addEventListener('click', () => command('previousTrack'));
  ui.next.addEventListener('click', () => command('nextTrack'));
  ui.repeat.addEventListener('click', () => {
    const following = { off: 'all', all: 'one', one: 'off' };
    command('changeRepeatMode', { mode: following[ui.repeat.dataset.mode] || 'all' });
  });
  ui.shuffle.addEventListener('click', () => {
    command('changeShuffleMode', { on: !(status && status.shuffle) });
  });

  let volumeTouched = -Infinity;
  let volumeTimer = 0;

  function volumeHeld() { return performance.now() - volumeTouched < 1000; }

  function showVolume(percent) {
    const value = Math.round(Number(percent) || 0);
    ui.volume.value = String(value);
    ui.volume.style.setProperty('--p', `${value}%`);
    setText(ui.volumeValue, value);
  }

  function sendVolume() {
    volumeTimer = 0;
    command('setVolume', { percent: Number(ui.volume.value) });
  }

  // At most one request every 150 ms while the slider moves, and the final value.
  ui.volume.addEventListener('input', () => {
    volumeTouched = performance.now();
    showVolume(ui.volume.value);
    if (!volumeTimer) volumeTimer = setTimeout(sendVolume, 150);
  });
  ui.volume.addEventListener('change', () => {
    volumeTouched = performance.now();
    clearTimeout(volumeTimer);
    sendVolume();
  });

  // ---------------------------------------------------------------- the queue

  let queue = null;
  let shownCurrent = null;

  function applyQueue(data) {
    clearTimeout(queueAsk);
    queueAsk = 0;
    queueStamp += 1;
    const before = queue ? queue.items || [] : null, after = data.items || [];
    const sameItems = before && queue.version === data.version && before.length === after.length &&
      before.every((item, index) => item.id === after[index].id);
    queue = data;
    if (sameItems) {
      // Only the current item moved on: no need to build a long queue again.
      for (const row of ui.queue.children) {
        const current = Number(row.dataset.itemId) === data.currentItem;
        row.classList.toggle('current', current);
        if (current) row.setAttribute('aria-current', 'true');
        else row.removeAttribute('aria-current');
      }
      showCurrent(data.currentItem);
      return;
    }
    const items = data.items || [];
    const total = items.reduce((sum, item) => sum + (Number(item.duration) || 0), 0);
    setText(ui.queueSummary, items.length ? `${plural(items.length, 'track', 'tracks')} · ${formatTime(total)}` : '');
    ui.queueEmpty.hidden = items.length > 0;
    ui.clear.disabled = items.length === 0;
    const rows = document.createDocumentFragment();
    items.forEach((item, index) => {
      const current = item.id === data.currentItem;
      rows.append(el('li', { class: current ? 'current' : '', dataset: { itemId: item.id, index }, 'aria-current': current ? 'true' : null },
        el('span', { class: 'num' }, index + 1),
        el('span', { class: 'row-text' },
          el('span', { class: 'line1' }, item.title || baseName(item.path)),
          el('span', { class: 'line2' }, [item.artist, item.album].filter(Boolean).join(' · '))),
        el('span', { class: 'duration' }, formatTime(item.duration)),
        Object.assign(iconButton('up', `Move ${item.title || 'item'} up`, 'up'), { disabled: index === 0 }),
        Object.assign(iconButton('down', `Move ${item.title || 'item'} down`, 'down'), { disabled: index === items.length - 1 }),
        iconButton('remove', `Remove ${item.title || 'item'} from the queue`, 'remove')));
    });
    ui.queue.replaceChildren(rows);
    showCurrent(data.currentItem);
  }

  // A track change comes as a status event. The queue event that says which item is current
  // follows it in the same burst when the daemon sends one; when none came, the page asks.
  let trackKey = null;
  let queueAsk = 0;
  let queueStamp = 0;

  function followTrack(data) {
    const key = `${data.queueIndex}\u0000${data.title}`;
    if (key === trackKey) return;
    const first = trackKey === null;
    trackKey = key;
    if (first || !queue) return;
    clearTimeout(queueAsk);
    queueAsk = setTimeout(async () => {
      queueAsk = 0;
      const stamp = queueStamp;
      const answer = await api({ command: 'queue' });
      if (answer.ok && stamp === queueStamp) applyQueue(answer.result);
    }, 150);
  }

  function showCurrent(item) {
    if (item === shownCurrent) return;
    shownCurrent = item;
    revealCurrent();
  }

  // Keeps the current item in view where the queue scrolls on its own (never the whole page).
  function revealCurrent() {
    const row = ui.queue.querySelector('li.current');
    const panel = ui.queue.closest('.panel');
    if (!row || !panel || panel.scrollHeight <= panel.clientHeight) return;
    const top = row.offsetTop - panel.offsetTop;
    if (top < panel.scrollTop || top + row.offsetHeight > panel.scrollTop + panel.clientHeight) {
      panel.scrollTop = Math.max(0, top - panel.clientHeight / 3);
    }
  }

  ui.queue.addEventListener('click', (event) => {
    const button = event.target.closest('button');
    const row = event.target.closest('li[data-item-id]');
    if (!row) return;
    const item = Number(row.dataset.itemId);
    const index = Number(row.dataset.index);
    // A tap on the row itself plays that item.
    if (!button) command('playItem', { item });
    else if (button.classList.contains('remove')) command('remove', { item });
    else if (button.classList.contains('up')) command('move', { item, to: index - 1 });
    else if (button.classList.contains('down')) command('move', { item, to: index + 1 });
  });

  // Clear asks twice: a stray tap on a touch screen should not empty the queue.
  let clearArmed = 0;
  ui.clear.addEventListener('click', () => {
    if (clearArmed) {
      clearTimeout(clearArmed);
      clearArmed = 0;
      ui.clear.classList.remove('armed');
      ui.clear.textContent = 'Clear';
      command('clear');
      return;
    }
    ui.clear.classList.add('armed');
    ui.clear.textContent = 'Tap again to clear';
    clearArmed = setTimeout(() => {
      clearArmed = 0;
      ui.clear.classList.remove('armed');
      ui.clear.textContent = 'Clear';
    }, 3000);
  });

  // ---------------------------------------------------------------- the library

  // Where the browser is: album artists, one artist's albums, or one album's tracks.
  let place = { artist: null, album: null };
  let libraryShown = false;
  let libraryRequest = 0;
  let libraryInfo = null;

  function applyLibrary(data) {
    const before = libraryInfo;
    libraryInfo = data;
    const scan = data.scan || {};
    const parts = [];
    if (scan.scanning) parts.push(`Scanning… ${plural(scan.indexed || 0, 'song', 'songs')} indexed`);
    else if (typeof data.songs === 'number') parts.push(plural(data.songs, 'song', 'songs'));
    if (data.unavailable && data.unavailable.length) parts.push(`not mounted: ${data.unavailable.join(', ')}`);
    setText(ui.libraryState, parts.join(' · '));
    const changed = before && (before.songs !== data.songs || before.lastUpdate !== data.lastUpdate ||
      (before.scan || {}).finishedJob !== scan.finishedJob || String(before.unavailable) !== String(data.unavailable));
    if (changed) {
      if (libraryShown) browse(place.artist, place.album, false);
      if (ui.search.value.trim()) runSearch();
    }
  }

  function crumb(label, artist, album, current) {
    return el('button', { type: 'button', disabled: current, 'aria-current': current ? 'page' : null,
      onclick: () => browse(artist, album, true) }, label);
  }

  function showLibraryNote(text) {
    setText(ui.libraryNote, text);
    ui.libraryNote.hidden = !text;
  }

  async function browse(artist, album, reveal) {
    libraryShown = true;
    place = { artist, album };
    const ticket = ++libraryRequest;
    const path = [crumb('Artists', null, null, artist === null)];
    if (artist !== null) path.push(el('span', { class: 'sep', 'aria-hidden': 'true' }, '›'), crumb(artist || 'Unknown artist', artist, null, album === null));
    if (album !== null) path.push(el('span', { class: 'sep', 'aria-hidden': 'true' }, '›'), crumb(album || 'Unknown album', artist, album, true));
    ui.libraryPath.replaceChildren(...path);

    const artistFilter = { tag: 'AlbumArtist', value: artist };
    let request;
    if (artist === null) request = { command: 'list', tag: 'AlbumArtist' };
    else if (album === null) request = { command: 'list', tag: 'Album', filters: [artistFilter] };
    else request = { command: 'find', filters: [artistFilter, { tag: 'Album', value: album }] };
    const answer = await api(request);
    if (ticket !== libraryRequest) return;
    if (!answer.ok) {
      ui.libraryList.replaceChildren();
      showLibraryNote(answer.message);
      return;
    }
    const rows = document.createDocumentFragment();
    if (artist === null) {
      for (const item of answer.result.items || []) {
        const name = item.albumartist;
        rows.append(el('li', null, el('button', { type: 'button', class: 'row-main', onclick: () => browse(name, null, true) },
          el('span', { class: 'line1' }, name || 'Unknown artist'), icon('chevron'))));
      }
      showLibraryNote(rows.childNodes.length ? '' : 'The library is empty.');
    } else if (album === null) {
      rows.append(el('li', { class: 'heading' }, el('span', { class: 'row-text' }, 'All albums'),
        Object.assign(iconButton('add', `Add everything by ${artist || 'this artist'}`, 'add'), {
          onclick: () => addToQueue({ command: 'findadd', filters: [artistFilter] }, `everything by ${artist || 'this artist'}`),
        })));
      for (const item of answer.result.items || []) {
        const name = item.album;
        rows.append(el('li', null,
          el('button', { type: 'button', class: 'row-main', onclick: () => browse(artist, name, true) },
            el('span', { class: 'line1' }, name || 'Unknown album'), icon('chevron')),
          Object.assign(iconButton('add', `Add the album ${name}`, 'add'), {
            onclick: () => addToQueue({ command: 'findadd', filters: [artistFilter, { tag: 'Album', value: name }] }, `the album ${name || ''}`.trim()),
          })));
      }
      showLibraryNote('');
    } else {
      const songs = answer.result.songs || [];
      rows.append(el('li', { class: 'heading' }, el('span', { class: 'row-text' }, plural(songs.length, 'track', 'tracks')),
        Object.assign(iconButton('add', `Add the album ${album}`, 'add'), {
          onclick: () => addToQueue({ command: 'findadd', filters: [artistFilter, { tag: 'Album', value: album }] }, `the album ${album || ''}`.trim()),
        })));
      songs.sort((a, b) => (parseInt(tag(a, 'Disc'), 10) || 0) - (parseInt(tag(b, 'Disc'), 10) || 0) ||
        (parseInt(tag(a, 'Track'), 10) || 0) - (parseInt(tag(b, 'Track'), 10) || 0));
      for (const song of songs) rows.append(songRow(song, parseInt(tag(song, 'Track'), 10) || '', false));
      showLibraryNote('');
    }
    ui.libraryList.replaceChildren(rows);
    if (reveal) ui.libraryPath.scrollIntoView({ block: 'nearest' });
  }

  function songRow(song, number, withAlbum) {
    const title = tag(song, 'Title') || baseName(song.file);
    const detail = withAlbum ? [tag(song, 'Artist'), tag(song, 'Album')].filter(Boolean).join(' · ') : tag(song, 'Artist');
    return el('li', { dataset: { path: song.file } },
      withAlbum ? null : el('span', { class: 'num' }, number),
      el('span', { class: 'row-text' }, el('span', { class: 'line1' }, title), el('span', { class: 'line2' }, detail || '')),
      el('span', { class: 'duration' }, formatTime(song.duration)),
      Object.assign(iconButton('add', `Add ${title} to the queue`, 'add'), {
        onclick: () => addToQueue({ command: 'add', paths: [song.file] }, title),
      }));
  }

  // ---- search: as you type, the newest answer wins.

  let searchTimer = 0;
  let searchRequest = 0;

  async function runSearch() {
    const text = ui.search.value.trim();
    const ticket = ++searchRequest;
    const searching = text.length > 0;
    ui.library.hidden = searching;
    ui.libraryState.hidden = searching;
    ui.searchResults.hidden = !searching;
    if (!searching) {
      ui.searchResults.replaceChildren();
      ui.searchNote.hidden = true;
      if (!libraryShown) browse(null, null);
      return;
    }
    const answer = await api({ command: 'search', filters: [{ tag: 'any', value: text }], limit: 100 });
    if (ticket !== searchRequest) return;
    const rows = document.createDocumentFragment();
    let note = '';
    if (!answer.ok) note = answer.message;
    else {
      const songs = answer.result.songs || [];
      for (const song of songs) rows.append(songRow(song, '', true));
      if (!songs.length) note = `Nothing matches “${text}”.`;
      else if (answer.result.total > songs.length) note = `The first ${songs.length} of ${answer.result.total}: type more to narrow it down.`;
    }
    ui.searchResults.replaceChildren(rows);
    setText(ui.searchNote, note);
    ui.searchNote.hidden = !note;
  }

  ui.search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 150);
  });
  ui.search.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      clearTimeout(searchTimer);
      runSearch();
    }
  });

  // ---------------------------------------------------------------- playlists and sessions

  function applyPlaylists(data) {
    const playlists = data.playlists || [];
    ui.playlistsEmpty.hidden = playlists.length > 0;
    ui.playlists.replaceChildren(...playlists.map((playlist) => {
      const entries = playlist.entries || [];
      return el('li', { dataset: { name: playlist.name } },
        el('span', { class: 'row-text' }, el('span', { class: 'line1' }, playlist.name),
          el('span', { class: 'line2' }, plural(entries.length, 'track', 'tracks'))),
        el('button', { type: 'button', class: 'text-button load', 'aria-label': `Load the playlist ${playlist.name}`,
          disabled: entries.length === 0,
          onclick: () => addToQueue({ command: 'add', paths: entries }, `the playlist ${playlist.name}`) }, 'Load'));
    }));
  }

  function applySessions(data) {
    const sessions = data.sessions || [];
    setText(ui.muteState, data.muted ? 'mute input on' : '');
    ui.sessions.replaceChildren(...sessions.map((session) => {
      const badges = [];
      const badge = (text, kind) => badges.push(el('span', { class: `badge ${kind || ''}` }, text));
      if (session.session === data.nowPlayingOwner || session.nowPlaying) badge('Now Playing', 'accent');
      badge(session.active ? 'active' : 'inactive', session.active ? 'on' : '');
      if (session.interrupted) badge('interrupted', 'warn');
      if ((session.duckedBy || []).length) badge(`ducked by ${session.duckedBy.map((id) => `#${id}`).join(', ')}`, 'warn');
      else if (session.ducked) badge('ducked', 'warn');
      if (session.mutedByInput) badge('muted', 'warn');
      const owner = session.owner === 'player' ? 'the player' : `client ${session.owner}`;
      const mode = session.mode && session.mode !== 'default' ? ` · ${session.mode}` : '';
      const gain = Number(session.gain) || 0;
      return el('li', { dataset: { session: session.session }, class: session.nowPlaying ? 'owner' : '' },
        el('span', { class: 'row-text' },
          el('span', { class: 'line1' }, `#${session.session} ${session.category}${mode}`),
          el('span', { class: 'line2' }, [owner].concat(session.options || [], session.stream && session.owner !== 'player' ? [session.stream] : []).join(' · ')),
          el('span', { class: 'badges' }, ...badges)),
        el('span', { class: 'gain' }, gain ? (typeof session.gainDB === 'number' ? `${session.gainDB.toFixed(1)} dB` : '') : 'silent',
          el('meter', { min: 0, max: 1, value: gain, 'aria-label': `Gain of session ${session.session}` })));
    }));
  }

  const HANDLERS = { status: applyStatus, queue: applyQueue, sessions: applySessions, playlists: applyPlaylists, library: applyLibrary };

  // ---------------------------------------------------------------- tabs

  const tabs = Array.from(document.querySelectorAll('.tab'));
  const kiosk = window.matchMedia('(min-width: 1400px)');

  function selectTab(name) {
    // On a kiosk the queue has its own column: its tab is not there.
    if (name === 'queue' && kiosk.matches) name = 'library';
    for (const tab of tabs) {
      const selected = tab.id === `tab-${name}`;
      tab.setAttribute('aria-selected', String(selected));
      tab.tabIndex = selected ? 0 : -1;
      $(tab.getAttribute('aria-controls')).classList.toggle('active', selected);
    }
    if (name === 'library' && !libraryShown && !ui.search.value.trim()) browse(null, null);
    try { localStorage.setItem('tonearm.tab', name); } catch (e) { /* not remembered */ }
  }

  for (const tab of tabs) tab.addEventListener('click', () => selectTab(tab.id.slice(4)));
  kiosk.addEventListener('change', () => {
    const current = tabs.find((tab) => tab.getAttribute('aria-selected') === 'true');
    selectTab(current ? current.id.slice(4) : 'library');
  });

  let firstTab = 'queue';
  try { firstTab = localStorage.getItem('tonearm.tab') || 'queue'; } catch (e) { /* the default */ }
  selectTab(tabs.some((tab) => tab.id === `tab-${firstTab}`) ? firstTab : 'queue');
  setConnection(false);
  setText(ui.connection, 'connecting…');
  connect();
})();