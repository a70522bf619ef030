/**
 * The fleet's state on disk, as a user meets it: `flotta serve` with no `store` in its config keeps state in
 * `.flotta/state.db`; one serve per store (a second is refused at once, naming the holder's pid); `doctor` shows
 * the store; after a stop, `flotta transcript`, `flotta reports` and `flotta diff` read it straight from the file
 * (a tool call's outcome, a worktree run's recorded diff); a restart
 * brings the agents back; a corrupt file is refused at start, untouched. The compiled binary as a child
 * process, the real claude CLI against the built-in simulator.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlotta, stopFlotta } from "./support/cli.js"
import { newRepo } from "./support/git.js"
import { type Served, startServe } from "./support/serve.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-store-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

/** Each serve here: stdin closed, and the time a first start in a new repository may take. */
const SERVE = { stdin: "ignore", timeout: 120_000 } as const
const stop = stopFlotta

/** The SQLite driver this Node uses, as doctor names it. */
const DRIVER = process.getBuiltinModule?.("node:sqlite") !== undefined ? "node:sqlite" : "better-sqlite3 12\\.[\\d.]+"

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The kinds of report lines (`seq at agent kind ...`). */
const kinds = (stdout: string) => stdout.trim().split("\n").map((line) => line.trim().split(/\s+/)[3])

describe("flotta serve keeps the fleet's state in .flotta/state.db", () => {
  it(
    "one serve per store; doctor, transcript and reports read it; a restart brings the agents back",
    { timeout: 420_000 },
    async () => {
      const project = path.join(dir, "durable")
      newRepo(project) // a repository, for a run in a worktree
      const db = path.join(project, ".flotta", "state.db")
      const first = await startServe(project, { config: { agents: [{ name: "scout" }] }, ...SERVE })
      const url = first.url
      let again: Served | undefined
      try {
        assert.isTrue(fs.existsSync(db), first.out.stderr)
        assert.include(first.out.stderr, `flotta serve: state in sqlite ${db} (schema v`)
        assert.notInclude(first.out.stderr, "restored")

        // One host per store: a second serve is refused at once, in one line naming the holder.
        const startedAt = Date.now()
        const second = await runFlotta(project, ["serve"])
        assert.strictEqual(second.code, 13, second.stderr)
        assert.isBelow(Date.now() - startedAt, 60_000)
        assert.match(
          second.stderr,
          new RegExp(
            `^flotta: StoreLocked: the store ${escape(db)} is in use by pid ${first.child.pid} .*FLOTTA_STORE\\)\\n$`
          )
        )
        assert.notInclude(second.stderr, "    at ", "no stack trace")

        // An agent spawned over MCP, asked something that takes a tool call; the config's session learns a fact.
        const client = new Client({ name: "cli-store-test", version: "0.0.0" })
        await client.connect(new StreamableHTTPClientTransport(new URL(url)))
        try {
          const spawned = await client.callTool({ name: "flotta_spawn", arguments: { name: "scribe" } })
          assert.notStrictEqual(spawned.isError, true, JSON.stringify(spawned.content))
          const tree = path.join(project, ".claude", "worktrees", "noted")
          const ran = await client.callTool({
            name: "flotta_run",
            arguments: {
              prompt: `WRITE ${tree}/notes.md one line`,
              name: "noted",
              worktree: true,
              cwd: project,
              permission: { allow: ["Write"] },
              timeoutSeconds: 50
            }
          })
          assert.notStrictEqual(ran.isError, true, JSON.stringify(ran.content))
        } finally {
          await client.close()
        }
        const asked = await runFlotta(project, ["ask", "scribe", "READ flotta.config.json"])
        assert.strictEqual(asked.code, 0, asked.stderr)
        assert.match(asked.stdout, /^TOOL_RESULT Read:/)
        const taught = await runFlotta(project, ["ask", "scout", "REMEMBER the tide turns at noon"])
        assert.strictEqual(taught.code, 0, taught.stderr)

        // doctor, beside the running serve: the file read-only, and the store as the serve sees it.
        const doctor = await runFlotta(project, ["doctor"])
        assert.match(
          doctor.stdout,
          new RegExp(`ok {4}store: sqlite ${escape(db)} \\(schema v\\d+, [\\d.]+ [kMG]?B, ${DRIVER}\\), ok\\n`)
        )
        assert.include(doctor.stdout, `ok    store: in use by the serve at ${url}, ok`)

        assert.strictEqual(await first.stop(60_000), 0, first.out.stderr)
        assert.isFalse(fs.existsSync(`${db}.lock`), "the lock goes with its holder")

        // The transcript and the report log, from the file.
        const transcript = await runFlotta(project, ["transcript", "scribe", "--store", ".flotta/state.db"])
        assert.strictEqual(transcript.code, 0, transcript.stderr)
        assert.match(
          transcript.stdout,
          /^scribe: 1 turn\n\nt1 {2}succeeded · \$\d+\.\d{4} · [\d.]+s · 2 model calls · /
        )
        assert.include(transcript.stdout, "  prompt:     READ flotta.config.json\n")
        assert.include(transcript.stdout, "  tool:       Read {\"file_path\":\"flotta.config.json\"}\n")
        assert.match(transcript.stdout, /\n {14}→ ok · [\d.]+ (B|KiB) · [\d.]+s\n/, "the Read call's outcome")
        assert.include(transcript.stdout, "  reply:      TOOL_RESULT Read:")
        const records = await runFlotta(project, ["transcript", "scribe", "--store", db, "--json"])
        assert.strictEqual(records.code, 0, records.stderr)
        const parsed = JSON.parse(records.stdout) as {
          name: string
          total: number
          turns: Array<{ prompt: string; status: string; toolCalls: Array<{ name: string }> }>
        }
        assert.deepStrictEqual([parsed.name, parsed.total], ["scribe", 1])
        assert.deepStrictEqual(parsed.turns.map((t) => [t.prompt, t.status]), [[
          "READ flotta.config.json",
          "succeeded"
        ]])
        assert.deepStrictEqual(parsed.turns[0]!.toolCalls.map((c) => c.name), ["Read"])

        const reports = await runFlotta(project, ["reports", "--store", ".flotta/state.db", "--agent", "scribe"])
        assert.strictEqual(reports.code, 0, reports.stderr)
        assert.deepStrictEqual(kinds(reports.stdout).slice(0, 5), [
          "spawned",
          "turn_started",
          "tool_call",
          "tool_result",
          "result"
        ])

        // No serve answers: the config's store is read, and stderr says so.
        const fallback = await runFlotta(project, ["transcript", "scout"])
        assert.strictEqual(fallback.code, 0, fallback.stderr)
        assert.include(fallback.stderr, `no serve answered at ${url}; reading the store ${db}`)
        assert.include(fallback.stdout, "  prompt:     REMEMBER the tide turns at noon\n")
        // The run's diff, recorded in the store when it ended: by --store, and by the fallback.
        const diffed = await runFlotta(project, ["diff", "noted", "--store", db])
        assert.strictEqual(diffed.code, 0, diffed.stderr)
        assert.match(diffed.stdout, /^noted: worktree-noted against [0-9a-f]{12}\n {2}\+1 +-0 +notes\.md\n/)
        assert.include(diffed.stdout, "+++ b/notes.md\n")
        const stat = await runFlotta(project, ["diff", "noted", "--stat"])
        assert.strictEqual(stat.code, 0, stat.stderr)
        assert.include(stat.stderr, `reading the store ${db}`)
        assert.notInclude(stat.stdout, "+++ b/notes.md")
        const noRun = await runFlotta(project, ["diff", "ghost", "--store", db])
        assert.strictEqual(noRun.code, 12)
        assert.match(noRun.stderr, /^flotta: RunNotFound: no run named "ghost"/)
        const unknown = await runFlotta(project, ["transcript", "ghost", "--store", db])
        assert.strictEqual(unknown.code, 12)
        assert.include(unknown.stderr, `no agent named "ghost" in the store ${db} (it holds: `)

        // A restart brings both agents back under their names, with their conversations.
        again = await startServe(project, SERVE)
        const running = again
        assert.match(running.out.stderr, /flotta serve: 2 agent\(s\) up \((scout, scribe|scribe, scout)\)/)
        assert.match(running.out.stderr, /flotta serve: restored 2 agents \((scout, scribe|scribe, scout)\)/)
        const recalled = await runFlotta(project, ["ask", "scout", "RECALL"])
        assert.strictEqual(recalled.code, 0, recalled.stderr)
        assert.strictEqual(recalled.stdout, "The fact is: the tide turns at noon\n")
        assert.strictEqual(await running.stop(60_000), 0, running.out.stderr)
      } finally {
        await stop(first.child, first.out)
        if (again !== undefined) await stop(again.child, again.out)
      }
    }
  )

  it("refuses a corrupt store at start, in one line naming the file and what to do, and leaves it as it was", {
    timeout: 180_000
  }, async () => {
    const project = path.join(dir, "corrupt")
    fs.mkdirSync(path.join(project, ".flotta"), { recursive: true })
    fs.writeFileSync(path.join(project, "flotta.config.json"), "{}")
    const db = path.join(project, ".flotta", "state.db")
    const garbage = "this was never an SQLite database, whatever its name says"
    fs.writeFileSync(db, garbage)
    const served = await runFlotta(project, ["serve"])
    assert.strictEqual(served.code, 13, served.stderr)
    assert.match(
      served.stderr,
      new RegExp(
        `^flotta: StoreUnavailable: the store ${escape(db)} cannot be used: .*\\. Move the file aside[^\\n]*\\n$`
      )
    )
    assert.strictEqual(fs.readFileSync(db, "utf8"), garbage)
    const doctor = await runFlotta(project, ["doctor"])
    assert.strictEqual(doctor.code, 13)
    assert.match(doctor.stdout, new RegExp(`FAIL {2}store: the store ${escape(db)} cannot be used`))
  })
})
