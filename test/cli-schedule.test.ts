/**
 * Steering a running scheduler from outside: a real `flotta serve --simulate` (the real claude CLI against the
 * built-in scripted model) with a `schedule` section, driven by `flotta schedule ...` and `flotta findings` as a
 * user would, and by an MCP client on the same endpoint, each seeing what the other did. `flotta mcp` over stdio
 * runs no scheduler: its steering tools answer SchedulerNotEnabled.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FLOTTA } from "./support/cli.js"
import { runInProcess } from "./support/inProcess.js"
import { freePort } from "./support/realCli.js"
import { withServe } from "./support/serve.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-schedule-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const ALL_WEEK = Object.fromEntries(["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map((d) => [d, ["00:00-24:00"]]))

const TASKS = { tasks: [{ title: "Fix the README", detail: "The install steps are stale.", priority: "high" }] }

/** A schedule whose routines fire only by hand here (the first interval ends an hour after boot). */
const CONFIG = {
  agents: [{ name: "helper" }],
  schedule: { timezone: "utc", hours: ALL_WEEK },
  routines: [
    {
      name: "nudge",
      action: "prompt",
      agent: "helper",
      prompt: "ECHO how are things?",
      every: { intervalMs: 3_600_000 }
    },
    {
      name: "survey",
      action: "scan",
      prompt: `STRUCTURED ${JSON.stringify(TASKS)}`,
      every: { intervalMs: 3_600_000 },
      dailyBudgetUsd: 5
    }
  ]
}

const json = <A = Record<string, unknown>>(stdout: string): A => JSON.parse(stdout) as A

interface Status {
  readonly mode: string
  readonly working: boolean
  readonly reason: string
  readonly overrides: ReadonlyArray<{ readonly kind: string }>
  readonly routines: ReadonlyArray<{ readonly name: string; readonly lastFire: { fireId: string; ok: boolean } | null }>
}

const structuredOf = <A = Record<string, unknown>>(result: unknown): A => {
  const r = result as { isError?: boolean; structuredContent?: unknown; content?: unknown }
  if (r.isError === true) throw new Error(`unexpected tool error: ${JSON.stringify(r.content)}`)
  return r.structuredContent as A
}

describe("flotta schedule and flotta findings against a running serve", () => {
  it("pause, resume, keep going, status, run a routine and read the findings, through the CLI and MCP", {
    timeout: 180_000
  }, async () => {
    await withServe(path.join(dir, "scheduled"), { config: CONFIG }, async (served) => {
      // What each command prints is checked in process (that it starts as the binary: test/cli-help.test.ts).
      const flotta = served.inProcess
      assert.include(served.out.stderr, "scheduler on", served.out.stderr)
      const client = await served.client()

      // The compact status: mode, working and why, today's windows, the routines and the day's spend.
      const status = await flotta("schedule", "status")
      assert.strictEqual(status.code, 0, status.stderr)
      assert.match(status.stdout, /^scheduler: working\nnow: working \(hours 00:00-24:00\)\n/)
      assert.match(status.stdout, /\ntoday: \w{3} \d{4}-\d{2}-\d{2}, 00:00-24:00 \(hours\)\n/)
      assert.match(
        status.stdout,
        /\n {2}nudge {3}prompt {2}every 1 h {2}idle {2}next [^\n]+ {2}last - {2}today \$0\.0000\n/
      )
      assert.match(status.stdout, /\n {2}survey {2}scan {4}every 1 h {2}idle {2}next [^\n]+today \$0\.0000 of \$5\n/)
      assert.match(status.stdout, /\nspend today: \$0\.0000\n$/)
      // `flotta schedule` alone is the status (and takes the connection flags, --json too).
      assert.strictEqual((await flotta("schedule")).stdout.split("\n")[0], "scheduler: working")
      assert.strictEqual(json<Status>((await flotta("schedule", "--json")).stdout).mode, "working")

      // Paused from the CLI: MCP sees it; resumed over MCP: the CLI sees it.
      const paused = await flotta("schedule", "pause")
      assert.strictEqual(paused.code, 0, paused.stderr)
      assert.match(paused.stdout, /^paused: no routine fires .*\nnow: not working \(paused\)\n$/)
      const seen = structuredOf<Status>(await client.callTool({ name: "flotta_schedule_status", arguments: {} }))
      assert.deepInclude(seen, { mode: "paused", working: false, reason: "paused" })
      structuredOf(await client.callTool({ name: "flotta_resume", arguments: {} }))
      const resumed = json<Status>((await flotta("schedule", "status", "--json")).stdout)
      assert.deepInclude(resumed, { mode: "working", working: true })
      const pausedAgain = await flotta("schedule", "pause", "--json")
      assert.strictEqual(json<{ status: Status }>(pausedAgain.stdout).status.mode, "paused")
      const resumedAgain = await flotta("schedule", "resume")
      assert.strictEqual(resumedAgain.stdout, "resumed\nnow: working (hours 00:00-24:00)\n")

      // Keep going: an override the status lists, over MCP too.
      const kept = await flotta("schedule", "keep-going", "30")
      assert.strictEqual(kept.code, 0, kept.stderr)
      assert.match(kept.stdout, /^keep going until [^\n]+ \(\+30 min\)\nnow: working \(hours 00:00-24:00\)\n$/)
      assert.match((await flotta("schedule", "status")).stdout, /\noverrides: keep going until [^\n]+ \(\+30 min\)\n/)
      const overrides = structuredOf<Status>(await client.callTool({ name: "flotta_schedule_status", arguments: {} }))
        .overrides
      assert.deepStrictEqual(overrides.map((o) => o.kind), ["keep_going"])
      const stopped = await flotta("schedule", "stop-for-today", "--json")
      assert.strictEqual(json<{ override: { kind: string }; status: Status }>(stopped.stdout).status.working, false)
      assert.match((await flotta("schedule", "resume")).stdout, /now: working/)

      // A routine fired by hand, through the real claude CLI: its reply; the scan's tasks become findings.
      const nudge = await flotta("schedule", "run", "nudge")
      assert.strictEqual(nudge.code, 0, nudge.stderr)
      assert.match(nudge.stdout, /^routine nudge: fire fire-[0-9a-f]{8} succeeded in [^\n]+\(\$\d+\.\d{4}\)\n/)
      assert.include(nudge.stdout, "\nreply: ECHO: how are things?\n")
      const survey = await flotta("schedule", "run", "survey", "--json")
      assert.strictEqual(survey.code, 0, survey.stderr)
      const fired = json<{ done: boolean; fireId: string; outcome: { ok: boolean; tasks: Array<{ title: string }> } }>(
        survey.stdout
      )
      assert.isTrue(fired.done)
      assert.isTrue(fired.outcome.ok)
      assert.deepStrictEqual(fired.outcome.tasks.map((t) => t.title), ["Fix the README"])

      const findings = await flotta("findings")
      assert.strictEqual(findings.code, 0, findings.stderr)
      assert.match(
        findings.stdout,
        /^\[high\] Fix the README \(survey, seen once, last [^\n]+ UTC\)\n {4}The install steps are stale\.\n$/
      )
      const overMcp = structuredOf<{ findings: Array<{ title: string; fireId: string }> }>(
        await client.callTool({ name: "flotta_findings", arguments: { routine: "survey" } })
      )
      assert.deepStrictEqual(overMcp.findings.map((f) => [f.title, f.fireId]), [["Fix the README", fired.fireId]])
      assert.deepStrictEqual(json<{ findings: unknown }>((await flotta("findings", "--json")).stdout), {
        findings: structuredOf<{ findings: unknown }>(
          await client.callTool({ name: "flotta_findings", arguments: {} })
        ).findings
      })

      // The status shows each routine's last outcome, to the CLI and over MCP alike.
      const after = structuredOf<Status>(await client.callTool({ name: "flotta_schedule_status", arguments: {} }))
      assert.deepStrictEqual(after.routines.map((r) => [r.name, r.lastFire?.ok]), [["nudge", true], ["survey", true]])
      assert.strictEqual(after.routines[1]!.lastFire!.fireId, fired.fireId)
      assert.match((await flotta("schedule", "status")).stdout, /\n {2}survey .* last ok [^\n]+\(\$\d+\.\d{4}\)/)

      // A routine fired over MCP is one the CLI's status then shows as fired.
      const viaMcp = structuredOf<{ done: boolean; outcome: { text: string } }>(
        await client.callTool({ name: "flotta_run_routine", arguments: { name: "nudge" } })
      )
      assert.isTrue(viaMcp.done)
      assert.strictEqual(viaMcp.outcome.text, "ECHO: how are things?")

      // Refusals: a clear message and the exit code of their kind.
      const unknown = await flotta("schedule", "run", "nope")
      assert.strictEqual(unknown.code, 12)
      assert.match(unknown.stderr, /^flotta: RoutineNotFound: no routine named "nope" \(routines: nudge, survey\)/)
      const past = await flotta("schedule", "work-on", "2020-01-01")
      assert.strictEqual(past.code, 2)
      assert.match(past.stderr, /InvalidSchedule: invalid date: 2020-01-01 is in the past/)
      const half = await flotta("schedule", "work-today", "18:00")
      assert.strictEqual(half.code, 2)
      assert.match(half.stderr, /<to>: give both FROM and TO/)
      const zero = await flotta("schedule", "keep-going", "0")
      assert.strictEqual(zero.code, 2)
      assert.match(zero.stderr, /<minutes>: "0" is not a whole number of minutes from 1 to 1440/)
    })
  })

  it("a serve without a schedule, and `flotta mcp` over stdio, answer SchedulerNotEnabled", {
    timeout: 120_000
  }, async () => {
    await withServe(path.join(dir, "unscheduled"), { config: {} }, async ({ out, project }) => {
      assert.include(out.stderr, "scheduler off", out.stderr)
      for (const args of [["schedule", "status"], ["schedule", "pause"], ["schedule", "run", "nudge"], ["findings"]]) {
        const ran = await runInProcess(project, args)
        assert.strictEqual(ran.code, 12, args.join(" "))
        assert.strictEqual(ran.stdout, "")
        assert.strictEqual(
          ran.stderr,
          "flotta: the serve answering here runs no scheduler (SchedulerNotEnabled): add a `schedule` section to " +
            "its config and restart `flotta serve`\n"
        )
      }
    })

    // `flotta mcp` never runs the scheduler, even when the config has one: each client starts its own.
    const stdioProject = path.join(dir, "stdio")
    fs.mkdirSync(stdioProject)
    fs.writeFileSync(
      path.join(stdioProject, "flotta.config.json"),
      JSON.stringify({ ...CONFIG, mcp: { port: await freePort() } })
    )
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [FLOTTA, "mcp", "--simulate"],
      cwd: stdioProject,
      stderr: "pipe"
    })
    const client = new Client({ name: "schedule-stdio-test", version: "0.0.0" })
    await client.connect(transport)
    try {
      const { tools } = await client.listTools()
      assert.includeMembers(tools.map((t) => t.name), ["flotta_schedule_status", "flotta_findings"])
      const result = await client.callTool({ name: "flotta_schedule_status", arguments: {} })
      assert.isTrue(result.isError)
      assert.deepStrictEqual((result.structuredContent as { error: unknown }).error, {
        _tag: "SchedulerNotEnabled",
        message: "the scheduler is not enabled: add a `schedule` section to the config"
      })
    } finally {
      await client.close()
    }
  })
})
