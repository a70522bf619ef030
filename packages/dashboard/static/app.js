// The dashboard's client, plain ES2020 served as is: the server renders every page; this script swaps in the live
// region (`?fragment=1`) when the report log moves (SSE), adds report rows, sends actions, ticks times, draws charts.
;(() => {
  "use strict"
  const body = document.body
  const { page, agent = "" } = body.dataset
  const live = document.getElementById("live")
  const flash = document.getElementById("flash")
  /** The newest report-log seq seen: a new EventSource replays from here. */
  let cursor = Number(body.dataset.cursor || 0)

  // --- the live region
  let timer = 0, started = 0, shown = 0
  /** Coalesced, not debounced: a steady stream of entries still refreshes every 150 ms, a burst only once. */
  const refresh = () => {
    timer ||= setTimeout(reload, 150)
  }

  /** Refetches the live region; an answer older than the one shown is dropped (they may overtake each other). */
  const reload = async () => {
    timer = 0
    const mine = ++started
    try {
      const url = `${location.pathname}${location.search ? `${location.search}&` : "?"}fragment=1`
      const res = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      if (res.status === 401) return location.reload() // the session ended: the server shows the login form
      const markup = await res.text()
      if (mine < shown) return
      shown = mine
      swap(markup)
    } catch {
      // Offline: the reconnect brings the page up to date.
    }
  }

  const fieldKey = (el) => `${el.form ? el.form.getAttribute("action") : ""}|${el.name}`

  /** Replaces the live region, keeping what was typed in it and where the focus was. */
  const swap = (markup) => {
    const fields = () => live.querySelectorAll("input:not([type=hidden]), textarea, select")
    const kept = new Map([...fields()].map((el) => [fieldKey(el), el.value]))
    const focused = live.contains(document.activeElement) ? fieldKey(document.activeElement) : null
    // A tool result someone opened stays open when the page is drawn again.
    const opened = new Set([...live.querySelectorAll("details[data-call][open]")].map((el) => el.dataset.call))
    live.innerHTML = markup
    for (const el of live.querySelectorAll("details[data-call]")) if (opened.has(el.dataset.call)) el.open = true
    showStreamed()
    for (const el of fields()) {
      const key = fieldKey(el)
      if (kept.has(key)) el.value = kept.get(key)
      if (key === focused) el.focus()
    }
    tick()
  }

  // --- a streaming agent's words as they come (`delta` events: never kept, the record has the whole message)
  /** The text streamed so far, by turn id: a refetched page shows it again in its running turn. */
  const streamed = new Map()
  const showStreamed = () => {
    for (const el of live.querySelectorAll("[data-stream]")) el.textContent = streamed.get(el.dataset.stream) || ""
  }
  const onDelta = (entry) => {
    if (page !== "agent" || entry.agent !== agent || typeof entry.data?.text !== "string") return
    streamed.set(entry.turnId, (streamed.get(entry.turnId) || "") + entry.data.text)
    showStreamed()
  }

  // --- reports, live
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v)
    node.append(...children)
    return node
  }

  /** Adds an entry at the top of the reports table when it matches the page's filter (once per seq). */
  const prepend = (entry) => {
    const tbody = live.querySelector("table[aria-label=Reports] tbody")
    if (!tbody || tbody.querySelector(`tr[data-seq="${entry.seq}"]`)) return
    const query = new URLSearchParams(location.search)
    const wanted = query.get("agent")?.trim()
    const kinds = query.getAll("kind").flatMap((k) => k.split(/[\s,]+/)).filter((k) => k.length > 0)
    if ((wanted && entry.agent !== wanted) || (kinds.length > 0 && !kinds.includes(entry.kind))) return
    tbody.querySelector("tr.empty")?.remove()
    tbody.prepend(el(
      "tr",
      { "data-seq": String(entry.seq) },
      el("td", { class: "num" }, String(entry.seq)),
      el("td", {}, el("time", { datetime: entry.at, "data-at": "" }, entry.at)),
      el("td", {}, el("a", { href: `/agents/${encodeURIComponent(entry.agent)}` }, entry.agent)),
      el("td", {}, el("span", { class: "kind" }, entry.kind)),
      el("td", { class: "summary-cell" }, entry.summary ?? "")
    ))
    while (tbody.rows.length > 500) tbody.deleteRow(-1)
    tick()
  }

  // --- events
  const onEntry = (entry) => {
    if (entry.kind === "result") charts.soon()
    if (page === "reports") return prepend(entry)
    if (page === "agent" && entry.agent !== agent && !entry.kind.startsWith("approval_")) return
    if (page === "run" && entry.agent !== agent) return // one run's page: only its own entries change it
    refresh()
  }

  let source = null, broken = false
  const connect = () => {
    source = new EventSource(`/events?since=${cursor}`)
    source.addEventListener("entry", (e) => {
      const seq = Number(e.lastEventId)
      if (seq <= cursor) return // already shown (a replay overlapping what the page had)
      cursor = seq
      onEntry(JSON.parse(e.data))
    })
    source.addEventListener("delta", (e) => onDelta(JSON.parse(e.data)))
    source.addEventListener("missed", refresh) // the server dropped entries for this slow page
    source.addEventListener("open", () => {
      if (broken) refresh() // back after an outage: the replay covers the log, the refetch the rest
      broken = false
    })
    source.addEventListener("error", () => {
      broken = true
      // CONNECTING: the browser retries by itself, with Last-Event-ID. CLOSED: it gave up, so start over.
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 1000)
    })
  }

  // --- actions
  document.addEventListener("submit", async (e) => {
    const form = e.target
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-action")) return
    e.preventDefault()
    const button = e.submitter
    const url = button?.hasAttribute("formaction") ? button.formAction : form.action
    const buttons = [...form.elements].filter((b) => b.type === "submit")
    buttons.forEach((b) => (b.disabled = true))
    try {
      const res = await fetch(url, {
        method: "POST",
        body: new URLSearchParams(new FormData(form, button)),
        credentials: "same-origin",
        headers: { Accept: "application/json" }
      })
      const reply = await res.json().catch(() => ({ ok: false }))
      const failed = !res.ok || !reply.ok
      flash.textContent = failed ? reply.error?.message ?? `The server answered ${res.status}.` : ""
      if (failed) return
      if (form.dataset.action === "send") form.reset()
      // A fork is an agent of its own: its page follows.
      if (form.dataset.action === "fork") return (location.href = `/agents/${encodeURIComponent(reply.result.name)}`)
      // Hibernate and Wake swap each other, outside the live region: the page is drawn again.
      if (form.dataset.action === "hibernate" || form.dataset.action === "wake") return location.reload()
      refresh()
    } catch {
      flash.textContent = "The dashboard's server cannot be reached."
    } finally {
      buttons.forEach((b) => (b.disabled = false))
    }
  })

  // --- times
  const pad = (n) => String(n).padStart(2, "0")
  const span = (ms) => {
    const s = Math.max(0, Math.floor(ms / 1000)), m = Math.floor(s / 60)
    return s < 60 ? `${s}s` : m < 60 ? `${m}m ${pad(s % 60)}s` : `${Math.floor(m / 60)}h ${pad(m % 60)}m`
  }
  const local = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" })

  const all = (selector) => document.querySelectorAll(selector)
  const tick = () => {
    const now = Date.now()
    for (const t of all("time[data-since]")) t.textContent = span(now - Date.parse(t.dataset.since))
    for (const t of all("time[data-until]")) {
      const left = Date.parse(t.dataset.until) - now
      t.textContent = left > 0 ? `${span(left)} left` : "time is up"
    }
    for (const t of all("time[data-at]:not([data-local])")) {
      t.textContent = local.format(new Date(t.getAttribute("datetime")))
      t.setAttribute("data-local", "")
    }
  }

  // --- charts
  const charts = (() => {
    const holder = document.getElementById("charts")
    if (!holder || !window.uPlot) return { soon: () => undefined }
    const plots = new Map()
    const palette = ["#2563eb", "#16a34a", "#ea580c", "#9333ea", "#0891b2", "#dc2626", "#ca8a04", "#db2777", "#64748b"]
    const css = (name) => getComputedStyle(body).getPropertyValue(name).trim()
    const format = (unit, v) => (v == null ? "—" : unit === "usd" ? `$${v.toFixed(4)}` : `${Math.round(v)} ms`)
    let last = 0, pending = 0

    const draw = (figure, chart) => {
      const target = figure.querySelector(".plot")
      const unit = figure.dataset.unit
      const key = figure.dataset.chart, names = chart.series.join("\n"), old = plots.get(key)
      // Steps hold each hour's (or day's: `data-step`) cost until the next: one more x closes the last step.
      const step = key === "costPerHour" ? 3600 : Number(figure.dataset.step || 0)
      const data = step > 0 && chart.data[0].length > 0
        ? chart.data.map((c, i) => [...c, i === 0 ? c.at(-1) + step : c.at(-1)])
        : chart.data
      figure.classList.toggle("no-data", chart.series.length === 0)
      if (old && old.names === names) return old.plot.setData(data)
      old?.plot.destroy()
      const axis = { stroke: css("--muted"), grid: { stroke: css("--line") }, ticks: { stroke: css("--line") } }
      const series = chart.series.map((label, i) => {
        const stroke = palette[i % palette.length]
        const look = key === "turnDuration"
          ? { paths: () => null, points: { show: true, size: 6, fill: stroke } }
          : { paths: window.uPlot.paths.stepped({ align: 1 }), fill: `${stroke}22`, points: { show: false } }
        return { label, stroke, width: 2, value: (u, v) => format(unit, v), ...look }
      })
      const axes = [axis, { ...axis, size: 70, values: (u, vals) => vals.map((v) => format(unit, v)) }]
      // One point has no width: give the time axis half an hour either side, not uPlot's years.
      const range = (u, min, max) => (min === max ? [min - 1800, max + 1800] : [min, max])
      const options = { width: target.clientWidth || 600, height: 220, scales: { x: { time: true, range } }, axes }
      const plot = new window.uPlot({ ...options, series: [{}, ...series] }, data, target)
      plots.set(key, { plot, names, target })
    }

    const load = async () => {
      pending = 0
      last = Date.now()
      try {
        // The agents page's charts, or the page's own (`data-src`: the costs page's, for its window).
        const res = await fetch(holder.dataset.src || "/api/charts", { credentials: "same-origin" })
        if (!res.ok) return
        const data = await res.json()
        for (const figure of holder.querySelectorAll("figure[data-chart]")) draw(figure, data[figure.dataset.chart])
      } catch {
        // The next result tries again.
      }
    }

    window.addEventListener("resize", () => {
      for (const { plot, target } of plots.values()) plot.setSize({ width: target.clientWidth, height: 220 })
    })
    load()
    // At most one fetch every 2 s, however many results come.
    return { soon: () => void (pending ||= setTimeout(load, Math.max(0, last + 2000 - Date.now()))) }
  })()

  tick()
  setInterval(tick, 1000)
  connect()
})()
