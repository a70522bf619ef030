// The fake Messages API against the real `claude` CLI, fully offline (see CLAUDE-CLI.md).
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { FakeMessagesApi, RecordedRequest } from "./support/FakeMessagesApi.js"
import { offlineEnv, startFakeMessagesApi } from "./support/FakeMessagesApi.js"

const claudeBin = path.join(import.meta.dirname, "..", "node_modules", ".bin", "claude")

// Markers of a surrounding Claude Code session must not leak into the child CLI.
const SESSION_MARKERS = new Set([
  "CLAUDECODE",
  "CLAUDE_CODE_ENTRYPOINT",
  "CLAUDE_CODE_SSE_PORT",
  "CLAUDE_AGENT_SDK_VERSION",
  "CLAUDE_CODE_SDK_READS_SESSION_STATE"
])

interface Run {
  readonly code: number
  readonly result: Record<string, unknown>
  readonly stderr: string
  readonly requests: ReadonlyArray<RecordedRequest> // what the fake saw during this run
  readonly ms: number
}

describe("FakeMessagesApi", () => {
  let api: FakeMessagesApi
  let root: string
  let cwd: string
  let env: Record<string, string>
  const roots: Array<string> = []
  const runs: Array<Run> = []

  beforeAll(async () => {
    api = await startFakeMessagesApi()
    root = fs.mkdtempSync(path.join(os.tmpdir(), "fake-messages-api-"))
    roots.push(root)
    cwd = path.join(root, "work")
    fs.mkdirSync(cwd)
    const parent: Record<string, string> = {}
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !SESSION_MARKERS.has(k)) parent[k] = v
    env = { ...parent, ...offlineEnv(api, root) }
  })

  afterAll(async () => {
    await api?.close()
    for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true })
  })

  // One-shot `claude -p <prompt> --output-format json`; runs are sequential, so the new requests are this run's.
  const claude = (prompt: string, ...args: Array<string>) =>
    new Promise<Run>((resolve, reject) => {
      const before = api.requests.length
      const started = performance.now()
      const child = execFile(
        claudeBin,
        ["-p", prompt, "--output-format", "json", ...args],
        { cwd, env, timeout: 60_000 },
        (error, stdout, stderr) => {
          const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
          try {
            const run: Run = {
              code,
              result: JSON.parse(stdout) as Record<string, unknown>,
              stderr,
              requests: api.requests.slice(before),
              ms: performance.now() - started
            }
            runs.push(run)
            resolve(run)
          } catch {
            reject(new Error(`claude ${prompt}: exit ${code}, stdout ${stdout}, stderr ${stderr}`))
          }
        }
      )
      child.stdin?.end() // else -p waits 3 s for stdin data
    })

  it("ECHO: one streamed text reply is the result", async () => {
    const run = await claude("ECHO hello fake")
    expect(run.code).toBe(0)
    expect(run.result).toMatchObject({
      type: "result",
      subtype: "success",
      is_error: false,
      result: "ECHO: hello fake"
    })
    expect(run.requests).toHaveLength(1)
    const [request] = run.requests
    expect(request!.url).toMatch(/^\/v1\/messages(\?|$)/)
    expect(request!.rule).toBe("ECHO")
    expect(request!.model).toEqual(expect.any(String))
    expect(Object.keys(run.result.modelUsage as object)).toEqual([request!.model])
  })

  it("READ: a tool round trip through the CLI's Read tool", async () => {
    const file = path.join(cwd, "notes.txt")
    fs.writeFileSync(file, "the secret line 42\n")
    const run = await claude(`READ ${file}`, "--allowedTools", "Read")
    expect(run.code).toBe(0)
    expect(run.result.is_error).toBe(false)
    expect(run.result.result).toMatch(/^TOOL_RESULT Read: /)
    expect(run.result.result).toContain("the secret line 42")
    expect(run.requests.map((r) => r.rule)).toEqual(["READ", "READ:result"])
  })

  it("ERROR 500: an API error result", async () => {
    const run = await claude("ERROR 500")
    expect(run.code).toBe(1)
    expect(run.result).toMatchObject({ is_error: true, api_error_status: 500 })
  })

  it("STRUCTURED: --json-schema yields structured_output", async () => {
    const schema = { type: "object", properties: { a: { type: "number" } }, required: ["a"] }
    const run = await claude("STRUCTURED {\"a\":1}", "--json-schema", JSON.stringify(schema))
    expect(run.code).toBe(0)
    expect(run.result.structured_output).toEqual({ a: 1 })
  })

  it("LOOP: --max-turns trips", async () => {
    const run = await claude("LOOP", "--max-turns", "2", "--allowedTools", "Read")
    expect(run.code).toBe(1)
    expect(run.result.subtype).toBe("error_max_turns")
    expect(run.requests.every((r) => r.rule === "LOOP")).toBe(true)
  })

  it("EXPENSIVE: --max-budget-usd trips", async () => {
    const run = await claude("EXPENSIVE", "--max-budget-usd", "0.01")
    expect(run.code).toBe(1)
    expect(run.result.subtype).toBe("error_max_budget_usd")
  })

  it("every CLI run reached the fake, and only /v1/messages", () => {
    expect(runs.length).toBeGreaterThanOrEqual(6)
    for (const run of runs) expect(run.requests.length).toBeGreaterThanOrEqual(1)
    expect(api.requests.every((r) => r.method === "POST" && r.url.startsWith("/v1/messages"))).toBe(true)
    expect(api.requests.reduce((n, r) => n + (r.time > 0 ? 1 : 0), 0)).toBe(api.requests.length)
  })

  describe("HTTP behaviour (no CLI)", () => {
    const post = (url: string, body: unknown, init?: RequestInit) =>
      fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        ...init
      })
    const ask = (text: string, stream: boolean) => ({
      model: "claude-test",
      max_tokens: 100,
      stream,
      messages: [{ role: "user", content: text }]
    })

    it("answers stream:false with a JSON message and unknown routes with 404", async () => {
      const res = await post(api.url, ask("ECHO plain", false))
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({
        type: "message",
        model: "claude-test",
        content: [{ type: "text", text: "ECHO: plain" }],
        stop_reason: "end_turn",
        usage: { input_tokens: 100, output_tokens: 20 }
      })
      const missing = await fetch(`${api.url}/v1/models`)
      expect(missing.status).toBe(404)
      expect(await missing.json()).toMatchObject({ type: "error" })
    })

    it("survives a client that disconnects mid-stream", async () => {
      const abort = new AbortController()
      const res = await post(api.url, ask("SLOW 2000 interrupted", true), { signal: abort.signal })
      const reader = res.body!.getReader()
      const first = new TextDecoder().decode((await reader.read()).value)
      expect(first).toContain("event: message_start")
      abort.abort()
      await reader.read().catch(() => undefined)
      const after = await post(api.url, ask("ECHO still alive", false))
      expect(await after.json()).toMatchObject({ content: [{ text: "ECHO: still alive" }] })
    })

    it("close() ends a hanging stream", async () => {
      const own = await startFakeMessagesApi()
      const res = await post(own.url, ask("HANG", true))
      const reader = res.body!.getReader()
      expect(new TextDecoder().decode((await reader.read()).value)).toContain("message_start")
      const started = performance.now()
      await own.close()
      expect(performance.now() - started).toBeLessThan(2_000)
      await expect(reader.read()).rejects.toThrow()
    })
  })
})
