/**
 * Shared pieces of the benchmarks: statistics, the raw child driver every baseline uses, the result shape,
 * tables, and the machine description. Benchmarks are scripts, not tests: nothing here runs under `npm test`.
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as readline from "node:readline"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as v8 from "node:v8"
import * as vm from "node:vm"
// The raw baseline starts the fake child with the same flags the engine gives every duplex child.
import { DUPLEX_FLAGS } from "../packages/core/src/ClaudeCli.js"

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
export const FAKE = path.join(ROOT, "packages/core/test/fixtures/fake-claude.mjs")
/** Frames of the real CLI (2.1.332) captured against the simulator: the fake replays them (FAKE_CLAUDE_FRAMES). */
export const REAL_FRAMES = path.join(ROOT, "test/fixtures/cli-frames-2.1.332.json")
/** The fake child's environment for realistic frames: every key the real CLI sends, at its real size. */
export const REALISTIC_ENV = { FAKE_CLAUDE_FRAMES: REAL_FRAMES }
export const CLAUDE = path.join(ROOT, "node_modules/.bin/claude")
export const OUT_DIR = path.join(ROOT, "bench/out")

// ------------------------------------------------------------------------------------------------ statistics

export const sortedCopy = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)

/** Nearest-rank percentile of an ascending array (p in 0..1). */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)))
  return sorted[rank - 1]!
}

export const median = (xs: ReadonlyArray<number>) => percentile(sortedCopy(xs), 0.5)

export const sum = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)

// ------------------------------------------------------------------------------------------------ formatting

export const fmtMs = (ms: number, digits = 3) => `${ms.toFixed(digits)} ms`
export const fmtS = (ms: number) => `${(ms / 1000).toFixed(2)} s`
export const fmtUs = (ms: number) => `${(ms * 1000).toFixed(1)} µs`
export const fmtKiB = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`
export const fmtMiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
export const fmtRate = (perSecond: number) => `${Math.round(perSecond).toLocaleString("en-US")}/s`
export const fmtInt = (n: number) => n.toLocaleString("en-US")
/** value ÷ baseline; "n/a" when the baseline is zero or negative (an overhead that rounds to nothing). */
export const fmtRatio = (value: number, baseline: number) =>
  baseline <= 0 || !Number.isFinite(value / baseline) ? "n/a" : `${(value / baseline).toFixed(2)}×`

// ------------------------------------------------------------------------------------------------ results

export type Verdict = "pass" | "miss" | "info"

export interface Row {
  readonly figure: string
  readonly value: string
  readonly baseline: string
  readonly ratio: string
  readonly target: string
  readonly verdict: Verdict
}

export interface Machine {
  readonly cpu: string
  readonly cpus: number
  readonly memory: string
  readonly node: string
  readonly claude: string
  readonly os: string
}

export interface BenchResult {
  readonly id: string
  readonly title: string
  /** How it was measured: what the figure and its baseline are. */
  readonly method: string
  readonly rows: ReadonlyArray<Row>
  /** Misses explained, failures recorded, caveats. */
  readonly notes: ReadonlyArray<string>
  readonly date: string
  readonly seconds: number
  readonly machine: Machine
  /** 1-minute load average when the benchmark started (it lags: it still counts work that just ended). */
  readonly loadAtStart: number
  /** Share of CPU time idle during the second before the start: other work on the machine skews timings. */
  readonly idleAtStart: number
}

export const row = (
  figure: string,
  value: string,
  baseline = "",
  ratio = "",
  target = "",
  verdict: Verdict = "info"
): Row => ({ figure, value, baseline, ratio, target, verdict })

/** A row with a target: `pass` decides the verdict. */
export const targetRow = (
  figure: string,
  value: string,
  baseline: string,
  ratio: string,
  target: string,
  pass: boolean
): Row => row(figure, value, baseline, ratio, target, pass ? "pass" : "miss")

export const machine = (): Machine => {
  const cpus = os.cpus()
  let claude = "unknown"
  try {
    claude = execFileSync(CLAUDE, ["--version"], { encoding: "utf8", timeout: 30_000 }).trim()
  } catch (error) {
    claude = `not runnable (${String(error).split("\n")[0]})`
  }
  return {
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cpus: cpus.length,
    memory: `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    claude,
    os: `${os.type()} ${os.release()} ${os.arch()}`
  }
}

const pad = (text: string, width: number) => text + " ".repeat(Math.max(0, width - [...text].length))

const HEADERS = ["Figure", "Measured", "Baseline", "Ratio", "Target", "Result"] as const
const cells = (
  r: Row
) => [r.figure, r.value, r.baseline, r.ratio, r.target, r.verdict === "info" ? "" : r.verdict.toUpperCase()]

export const textTable = (result: BenchResult): string => {
  const body = result.rows.map(cells)
  const widths = HEADERS.map((h, i) => Math.max([...h].length, ...body.map((c) => [...c[i]!].length)))
  const line = (c: ReadonlyArray<string>) => c.map((x, i) => pad(x, widths[i]!)).join("  ").trimEnd()
  return [
    `== ${result.title} (${result.seconds.toFixed(1)} s)`,
    line(HEADERS),
    line(widths.map((w) => "-".repeat(w))),
    ...body.map(line),
    ...result.notes.map((n) => `  * ${n}`)
  ].join("\n")
}

const mdCell = (text: string) => text.replace(/\|/g, "\\|")

export const markdownTable = (result: BenchResult): string =>
  [
    `| ${HEADERS.join(" | ")} |`,
    `| ${HEADERS.map(() => "---").join(" | ")} |`,
    ...result.rows.map((r) =>
      `| ${cells(r).map((c, i) => (i === 5 && c !== "" ? `**${c}**` : mdCell(c))).join(" | ")} |`
    )
  ].join("\n")

/** Runs a benchmark and prints its table; keeps the result in bench/out/<id>.json for `run.ts` to compose. */
export const main = async (
  id: string,
  title: string,
  body: () => Promise<
    Omit<BenchResult, "id" | "title" | "date" | "seconds" | "machine" | "loadAtStart" | "idleAtStart">
  >
) => {
  const idleAtStart = await idleShare(1000)
  const started = performance.now()
  const date = new Date().toISOString()
  const loadAtStart = os.loadavg()[0] ?? 0
  const partial = await body()
  const result: BenchResult = {
    id,
    title,
    ...partial,
    date,
    seconds: (performance.now() - started) / 1000,
    machine: machine(),
    loadAtStart,
    idleAtStart
  }
  console.log("\n" + textTable(result) + "\n")
  fs.mkdirSync(OUT_DIR, { recursive: true })
  fs.writeFileSync(path.join(OUT_DIR, `${id}.json`), JSON.stringify(result, null, 2))
  return result
}

/** Share of CPU time idle over `ms`, from the kernel's counters. */
export const idleShare = async (ms: number) => {
  const total = () =>
    os.cpus().reduce((acc, c) => {
      const t = c.times
      return { idle: acc.idle + t.idle, all: acc.all + t.idle + t.user + t.nice + t.sys + t.irq }
    }, { idle: 0, all: 0 })
  const a = total()
  await new Promise((resolve) => setTimeout(resolve, ms))
  const b = total()
  return b.all === a.all ? 1 : (b.idle - a.idle) / (b.all - a.all)
}

/** True when this module is the script node was started with (a benchmark run alone). */
export const isMain = (url: string) =>
  process.argv[1] !== undefined && pathToFileURL(path.resolve(process.argv[1])).href === url

// ------------------------------------------------------------------------------------------------ memory

let gcFn: (() => void) | undefined

/** A full GC; works without --expose-gc by turning the flag on at run time. */
export const gc = () => {
  if (gcFn === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc
    if (typeof exposed === "function") gcFn = exposed
    else {
      v8.setFlagsFromString("--expose-gc")
      gcFn = vm.runInNewContext("gc") as () => void
    }
  }
  // Several passes: weak callbacks and finalizers free more on the next one.
  for (let i = 0; i < 4; i++) gcFn()
}

export const settle = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Heap in use after a full GC, once pending callbacks have run. */
export const heapAfterGc = async () => {
  await settle(50)
  gc()
  await settle(20)
  gc()
  return process.memoryUsage().heapUsed
}

/** PIDs still present (signal 0 succeeds; EPERM also means it exists). Zombies are listed with their state. */
export const survivors = (pids: ReadonlyArray<number>) =>
  pids.flatMap((pid) => {
    try {
      process.kill(pid, 0)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ESRCH") return []
    }
    let state = "?"
    try {
      state = fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "").slice(0, 1)
    } catch {
      // gone between the two reads
    }
    return [{ pid, state }]
  })

/** The process and its descendants (Linux /proc). */
export const processTree = (pid: number): Array<number> => {
  const out = [pid]
  for (let i = 0; i < out.length; i++) {
    try {
      const tasks = fs.readdirSync(`/proc/${out[i]}/task`)
      for (const task of tasks) {
        const children = fs.readFileSync(`/proc/${out[i]}/task/${task}/children`, "utf8").trim()
        if (children !== "") out.push(...children.split(/\s+/).map(Number))
      }
    } catch {
      // the process ended meanwhile
    }
  }
  return out
}

/** Proportional set size in bytes (shared pages split among the processes that map them). */
export const pss = (pid: number): number => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8")
    const match = /^Pss:\s+(\d+) kB/m.exec(text)
    return match === null ? 0 : Number(match[1]) * 1024
  } catch {
    return 0
  }
}

export const rss = (pid: number): number => {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? 0 : Number(match[1]) * 1024
  } catch {
    return 0
  }
}

// ------------------------------------------------------------------------------------------------ the fake API

export interface FakeApi {
  readonly url: string
  /** Ends the server; resolves to the number of requests it answered. */
  readonly stop: () => Promise<number>
}

/** The fake Messages API in its own process (bench/support/fake-api.ts). */
export const startFakeApi = async (): Promise<FakeApi> => {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/support/fake-api.ts")], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = readline.createInterface({ input: child.stdout })
  const iterator = lines[Symbol.asyncIterator]()
  const first = await iterator.next()
  if (first.done === true) throw new Error("the fake Messages API did not start")
  const { url } = JSON.parse(String(first.value)) as { readonly url: string }
  return {
    url,
    stop: async () => {
      child.stdin.end()
      const last = await iterator.next()
      return last.done === true ? -1 : (JSON.parse(String(last.value)) as { readonly requests: number }).requests
    }
  }
}

/** Memory the kernel can still hand out (MemAvailable). */
export const availableMemory = () => {
  const match = /^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync("/proc/meminfo", "utf8"))
  return match === null ? os.freemem() : Number(match[1]) * 1024
}

// ------------------------------------------------------------------------------------------------ concurrency

/** At most `n` of the functions run at once. */
export const limiter = (n: number) => {
  let active = 0
  const queue: Array<() => void> = []
  const release = () => {
    active--
    queue.shift()?.()
  }
  return async <A>(f: () => Promise<A>): Promise<A> => {
    if (active >= n) await new Promise<void>((resolve) => queue.push(resolve))
    active++
    try {
      return await f()
    } finally {
      release()
    }
  }
}

// ------------------------------------------------------------------------------------------------ raw child

export type Frame = Record<string, unknown> & { readonly type?: unknown }

/**
 * A claude-protocol child driven directly with child_process: the baseline every fleet figure is set against.
 * It does the least a host must do: write NDJSON lines, split stdout into lines, decode each, match the one awaited.
 */
export class RawChild {
  readonly child: ChildProcessWithoutNullStreams
  readonly exited: Promise<number | null>
  private buffer = ""
  private waiter:
    | {
      readonly match: (f: Frame) => boolean
      readonly resolve: (f: Frame) => void
      readonly reject: (e: Error) => void
    }
    | undefined
  private requests = 0
  private gone = false
  stderr = ""

  constructor(
    command: string,
    args: ReadonlyArray<string>,
    options: { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string } = {}
  ) {
    this.child = spawn(command, args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: options.env ?? process.env,
      cwd: options.cwd ?? ROOT
    })
    this.child.stdout.setEncoding("utf8")
    this.child.stdout.on("data", (chunk: string) => this.onData(chunk))
    // An unread stderr pipe can block the child; keep only a tail.
    this.child.stderr.setEncoding("utf8")
    this.child.stderr.on("data", (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4000)
    })
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)))
    void this.exited.then((code) => {
      this.gone = true
      const waiter = this.waiter
      this.waiter = undefined
      waiter?.reject(new Error(`child exited (${code}) while waiting; stderr: ${this.stderr}`))
    })
  }

  static fake(env: Readonly<Record<string, string>> = {}): RawChild {
    return new RawChild(process.execPath, [FAKE, ...DUPLEX_FLAGS, "--session-id", randomUUID()], {
      env: { ...process.env, ...env }
    })
  }

  get pid(): number {
    return this.child.pid ?? -1
  }

  private onData(chunk: string) {
    this.buffer += chunk
    let start = 0
    let nl: number
    while ((nl = this.buffer.indexOf("\n", start)) >= 0) {
      const line = this.buffer.slice(start, nl)
      start = nl + 1
      if (this.waiter === undefined || line.length === 0) continue
      let frame: Frame
      try {
        frame = JSON.parse(line) as Frame
      } catch {
        continue
      }
      if (this.waiter.match(frame)) {
        const { resolve } = this.waiter
        this.waiter = undefined
        resolve(frame)
      }
    }
    this.buffer = this.buffer.slice(start)
  }

  send(frame: unknown) {
    this.child.stdin.write(JSON.stringify(frame) + "\n")
  }

  /** The next frame that matches; fails if the child exits first. */
  next(match: (f: Frame) => boolean): Promise<Frame> {
    if (this.gone) return Promise.reject(new Error(`child has exited; stderr: ${this.stderr}`))
    return new Promise((resolve, reject) => {
      this.waiter = { match, resolve, reject }
    })
  }

  /** Sends `initialize` and waits for its answer: the child is ready. */
  async initialize(): Promise<void> {
    const id = `raw_${++this.requests}`
    const answer = this.next((f) =>
      f.type === "control_response" && (f.response as { request_id?: unknown })?.request_id === id
    )
    this.send({ type: "control_request", request_id: id, request: { subtype: "initialize" } })
    await answer
  }

  /** One user turn: write the frame, read until the `result` frame. */
  async turn(text: string): Promise<Frame> {
    const result = this.next((f) => f.type === "result")
    this.send({
      type: "user",
      session_id: "",
      message: { role: "user", content: [{ type: "text", text }] },
      parent_tool_use_id: null
    })
    return result
  }

  /** Ends stdin and waits for the exit. */
  async end(): Promise<number | null> {
    this.child.stdin.end()
    return this.exited
  }
}
