/**
 * The commands a person drives a serve with from a shell, against one real `flotta serve --simulate --json` (the
 * real claude CLI against the built-in scripted model) in a git repository: spawn, info, interrupt, wait and
 * broadcast; the async runs an MCP client starts, listed and read with `flotta runs`; and the local git commands
 * beside it (worktrees, gc, verify), which leave alone the worktree of a run still going. Each with and without
 * --json, and an unknown agent or run answered with the fleet's typed error and its exit code.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { newRepo } from "./support/git.js"
import { runAllInProcess as runFlottaAll } from "./support/inProcess.js"
import { withServe } from "./support/serve.js"
import { eventually } from "./support/waiting.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-agents-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const json = <A = Record<string, unknown>>(stdout: string): A => JSON.parse(stdout) as A

const structuredOf = <A = Record<string, unknown>>(result: unknown): A => {
  const r = result as { isError?: boolean; structuredContent?: unknown; content?: unknown }
  if (r.isError === true) throw new Error(`unexpected tool error: ${JSON.stringify(r.content)}`)
  return r.structuredContent as A
}

const SESSION = "[0-9a-f-]{36}"

describe("the agent, run and worktree commands against a running serve", () => {
  it("spawn, info, interrupt, wait, broadcast, runs, worktrees, gc and verify, as text and as JSON", {
    timeout: 300_000
  }, async () => {
    const project = path.join(dir, "repo")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, "README.md"), "hello\n")
    newRepo(project)
    const config = { agents: [{ name: "scout" }], store: "memory" }
    await withServe(project, { config, args: ["--simulate", "--json"] }, async (served) => {
      const { out, port } = served
      // What each command prints is checked in process (that it starts as the binary: test/cli-help.test.ts).
      const flotta = served.inProcess
      // --json: one line on stdout, ready; the lines for a person stay on stderr.
      const ready = json<{ event: string; agents: Array<string>; mcp: string; scheduler: boolean }>(out.stdout)
      assert.deepInclude(ready, { event: "ready", agents: ["scout"], mcp: `http://127.0.0.1:${port}/mcp` })
      assert.isFalse(ready.scheduler)
      assert.strictEqual(out.stdout.split("\n").filter((l) => l.length > 0).length, 1)
      assert.include(out.stderr, "1 agent(s) up (scout)")
      const mcp = await served.client()
      const status = async (name: string) =>
        structuredOf<{ current: string | null }>(await mcp.callTool({ name: "flotta_status", arguments: { name } }))

      // spawn: its options, each given; the agent as one line, or its info as JSON.
      const spawned = await flotta("spawn", "helper", "--model", "sonnet", "--timeout", "90", "--env", "A=1")
      assert.strictEqual(spawned.code, 0, spawned.stderr)
      assert.match(
        spawned.stdout,
        new RegExp(`^helper is up: idle, pid \\d+, model sonnet, read_only, in ${project} \\(session ${SESSION}\\)\n$`)
      )
      const quiet = await flotta("spawn", "quiet", "--allow", "Read", "--ask", "Bash", "--role", "manager", "--json")
      assert.strictEqual(quiet.code, 0, quiet.stderr)
      assert.deepInclude(json<{ name: string; role: string; permission: unknown }>(quiet.stdout), {
        name: "quiet",
        role: "manager",
        permission: { allow: ["Read"], ask: ["Bash"] }
      })
      const [info, infoJson, taken] = await runFlottaAll(project, [
        ["info", "helper"],
        ["info", "helper", "--json"],
        ["spawn", "helper"]
      ])
      assert.match(info!.stdout, /^helper: idle\n {2}process: {4}pid \d+\n/)
      assert.include(info!.stdout, `\n  cwd:        ${project}\n  model:      sonnet\n  permission: read_only\n`)
      assert.include(info!.stdout, "\n  turns:      0 finished, 0 queued\n")
      assert.deepInclude(
        json<{ name: string; model: string; cwd: string; queued: number }>(infoJson!.stdout),
        { name: "helper", model: "sonnet", cwd: project, queued: 0 }
      )
      assert.strictEqual(taken!.code, 12)
      assert.match(taken!.stderr, /^flotta: AgentAlreadyExists: .*`flotta close` the existing agent first\.\n$/)

      // wait: a turn to its end; --timeout gives up (the turn goes on); interrupt ends it.
      const first = (await flotta("prompt", "helper", "SLOW 1500 waited")).stdout.trim()
      const waited = await flotta("wait", "helper", first)
      assert.strictEqual(waited.stdout, "SLOW DONE waited\n", waited.stderr)
      const waitedJson = json<{ done: boolean; kind: string; result: { text: string } }>(
        (await flotta("wait", "helper", "--json")).stdout
      )
      assert.deepInclude(waitedJson, { done: true, kind: "turn" })
      assert.strictEqual(waitedJson.result.text, "SLOW DONE waited")
      const long = (await flotta("prompt", "helper", "SLOW 60000 cut")).stdout.trim()
      await eventually(() => status("helper"), (s) => s.current === long, 30_000, "the long turn to start")
      const gaveUp = await flotta("wait", "helper", long, "--timeout", "1s")
      assert.strictEqual(gaveUp.code, 12, gaveUp.stderr)
      assert.strictEqual(
        gaveUp.stderr,
        `flotta: TurnPending: turn ${long} of helper is still going after 1.0 s; it goes on ` +
          `(\`flotta wait helper ${long}\` waits again).\n`
      )
      const interrupted = await flotta("interrupt", "helper")
      assert.strictEqual(
        interrupted.stdout,
        `interrupted turn ${long} of helper (it ends with TurnInterrupted; queued turns go on)\n`
      )
      const [cut, idle] = await runFlottaAll(project, [["wait", "helper", long], ["interrupt", "helper", "--json"]])
      assert.strictEqual(cut!.code, 10)
      assert.match(cut!.stderr, new RegExp(`^flotta: TurnInterrupted: turn ${long} of "helper" was interrupted`))
      assert.deepStrictEqual(json(idle!.stdout), { name: "helper", interrupted: false, turnId: null })

      // broadcast: every live agent's reply, as lines or as JSON.
      const said = await flotta("broadcast", "ECHO to all")
      assert.strictEqual(said.code, 0, said.stderr)
      const lines = said.stdout.trim().split("\n").sort()
      assert.deepStrictEqual(lines.map((l) => l.replace(/ \(t\d+, \$\d+\.\d{4}\)/, "")), [
        "helper: ECHO: to all",
        "quiet: ECHO: to all",
        "scout: ECHO: to all"
      ])
      const saidJson = json<{ agents: Array<{ name: string; ok: boolean; done: boolean; text: string }> }>(
        (await flotta("broadcast", "ECHO again", "--json", "--timeout", "2m")).stdout
      )
      assert.sameMembers(saidJson.agents.map((a) => a.name), ["helper", "quiet", "scout"])
      assert.isTrue(saidJson.agents.every((a) => a.ok && a.done && a.text === "ECHO: again"))

      // An unknown agent: the fleet's own error, exit code 12, advice for the shell.
      const unknown = await runFlottaAll(project, [["info", "ghost"], ["wait", "ghost"], [
        "interrupt",
        "ghost",
        "--json"
      ]])
      for (const ran of unknown) {
        assert.strictEqual(ran.code, 12, ran.stderr)
        assert.strictEqual(ran.stdout, "")
        assert.match(
          ran.stderr,
          /^flotta: AgentNotFound: no agent named "ghost" \(live agents: [^)]*\)\. `flotta list`/
        )
      }

      // Async runs, started by an MCP client: one that succeeds in its own worktree, one that fails, a verify, and
      // one still going in its worktree.
      const start = (name: string, args: Record<string, unknown>) =>
        mcp.callTool({ name, arguments: args }).then((r) => structuredOf<{ name: string }>(r).name)
      await start("flotta_run", { prompt: "ECHO errand done", name: "errand", worktree: true, cwd: project })
      await start("flotta_run", { prompt: "ERROR 500", name: "doomed" })
      await start("flotta_verify", { cwd: project, branch: "main", checks: ["true"], name: "checked" })
      const errand = await flotta("wait", "errand")
      assert.strictEqual(errand.code, 0, errand.stderr)
      const errandTree = path.join(project, ".claude", "worktrees", "errand")
      assert.match(
        errand.stdout,
        new RegExp(
          `^ECHO: errand done\n— \\$\\d+\\.\\d{4} · [\\d.]+s · 1 model call · session ${SESSION} · worktree ${errandTree}\n$`
        )
      )
      await start("flotta_run", { prompt: "SLOW 600000 going", name: "going", worktree: true, cwd: project })
      await eventually(
        () => status("going").catch(() => ({ current: null })),
        (s) => s.current !== null,
        30_000,
        "the run"
      )
      await eventually(
        () => flotta("runs", "--json", "--state", "failed"),
        (r) => json<{ runs: Array<unknown> }>(r.stdout).runs.length === 1,
        30_000,
        "the failed run to be listed"
      )

      const [listed, listedJson, failedOnly, one, oneJson, failed, pending, missing, verified] = await runFlottaAll(
        project,
        [
          ["runs"],
          ["runs", "--json"],
          ["runs", "--state", "failed", "--json"],
          ["runs", "errand"],
          ["runs", "errand", "--json"],
          ["runs", "doomed"],
          ["runs", "going"],
          ["runs", "nothing"],
          ["runs", "checked"]
        ]
      )
      const rows = listed!.stdout.trim().split("\n")
      assert.match(rows[0]!, /^NAME +KIND +STATE +STARTED \(UTC\) +TOOK +COST +BRANCH$/)
      const row = (name: string) => rows.find((r) => r.startsWith(`${name} `)) ?? ""
      assert.match(
        row("going"),
        /^going +run +running +\S+ \S+ +[\d.]+ \w+( \d+ s)? so far +\$\d+\.\d{4} +worktree-going$/
      )
      assert.match(row("errand"), /^errand +run +succeeded .* \$\d+\.\d{4} +worktree-errand$/)
      assert.match(row("doomed"), /^doomed +run +failed \(TurnFailed\) .* - +-$/)
      assert.match(row("checked"), /^checked +verify +passed .* - +main$/)
      const views = json<{ runs: Array<{ name: string; state: string }> }>(listedJson!.stdout).runs
      assert.strictEqual(views[0]!.name, "going", "newest first")
      assert.sameMembers(views.map((v) => v.name), ["going", "checked", "doomed", "errand"])
      assert.deepStrictEqual(
        json<{ runs: Array<{ name: string; error: string }> }>(failedOnly!.stdout).runs.map((r) => [r.name, r.error]),
        [["doomed", "TurnFailed"]]
      )
      assert.strictEqual(one!.stdout, errand.stdout)
      assert.deepInclude(json<{ result: { text: string } }>(oneJson!.stdout).result, { text: "ECHO: errand done" })
      assert.strictEqual(failed!.code, 5)
      assert.match(failed!.stderr, /^flotta: TurnFailed: turn t1 of "doomed" failed \(HTTP 500\)/)
      assert.strictEqual(pending!.code, 12)
      assert.match(pending!.stderr, /^flotta: TurnPending: .*`flotta wait NAME` waits for it\.\n$/)
      assert.strictEqual(missing!.code, 12)
      assert.strictEqual(
        missing!.stderr,
        "flotta: RunNotFound: no run named \"nothing\". `flotta runs` lists the runs the serve knows.\n"
      )
      assert.match(verified!.stdout, /^verify checked: main \([0-9a-f]{12}\) passed\n {2}ok {4}true \(/)

      // The local git commands, beside the serve: the running run's worktree is locked, so gc keeps it.
      const goingTree = path.join(project, ".claude", "worktrees", "going")
      const [trees, treesJson] = await runFlottaAll(project, [["worktrees"], ["worktrees", "--json", "--cwd", project]])
      assert.match(trees!.stdout, /\n\.claude\/worktrees\/errand +worktree-errand +clean +\S/)
      assert.match(trees!.stdout, /\n\.claude\/worktrees\/going +worktree-going +clean, locked \(a run uses it\) +\S/)
      const listedTrees = json<{ repo: string; worktrees: Array<{ path: string; locked: boolean }> }>(treesJson!.stdout)
      assert.strictEqual(listedTrees.repo, project)
      assert.deepStrictEqual(
        listedTrees.worktrees.map((w) => [w.path, w.locked]).sort(),
        [[errandTree, false], [goingTree, true]]
      )
      const collected = await flotta("gc")
      assert.strictEqual(collected.code, 0, collected.stderr)
      assert.strictEqual(
        collected.stdout,
        "removed .claude/worktrees/errand\n" +
          "kept .claude/worktrees/going: it is locked; if no run uses it any more, `git worktree unlock <path>` " +
          "releases it\n"
      )
      assert.isTrue(fs.existsSync(goingTree), "the running run's worktree is still there")

      // A run's diff outlives its worktree (gc removed errand's); a run without one is NoDiff.
      const [diffed, diffedJson, noTree, noRun] = await runFlottaAll(project, [
        ["diff", "errand"],
        ["diff", "errand", "--json"],
        ["diff", "doomed"],
        ["diff", "nothing"]
      ])
      assert.match(diffed!.stdout, /^errand: worktree-errand against [0-9a-f]{12}\n {2}no changes\n0 files changed/)
      assert.deepInclude(
        json<{ name: string; worktree: string; files: Array<unknown>; running: boolean }>(diffedJson!.stdout),
        {
          name: "errand",
          worktree: errandTree,
          files: [],
          running: false
        }
      )
      assert.strictEqual(noTree!.code, 12)
      assert.match(noTree!.stderr, /^flotta: NoDiff: run "doomed" had no worktree/)
      assert.strictEqual(noRun!.code, 12)
      assert.match(noRun!.stderr, /^flotta: RunNotFound: no run named "nothing"/)

      // A run is an agent: interrupt reaches it, its worktree is unlocked, and gc collects it.
      assert.match((await flotta("interrupt", "going")).stdout, /^interrupted turn t1 of going /)
      const ended = await flotta("wait", "going")
      assert.strictEqual(ended.code, 10, ended.stderr)
      const again = json<{ removed: Array<string>; kept: Array<unknown> }>((await flotta("gc", "--json")).stdout)
      assert.deepStrictEqual(
        again,
        { repo: project, removed: [goingTree], committed: [], discarded: [], kept: [] } as unknown as typeof again
      )
      assert.strictEqual((await flotta("worktrees")).stdout, "no run worktrees\n")

      // verify, here: every check's outcome; a failed check is exit code 14.
      const [passed, failing] = await runFlottaAll(project, [
        ["verify", "main", "true", "git log --oneline"],
        ["verify", "main", "true", "echo broken; exit 3", "--json"]
      ])
      assert.strictEqual(passed!.code, 0, passed!.stderr)
      assert.match(passed!.stdout, /^verify: main \([0-9a-f]{12}\) passed\n {2}ok {4}true \(.+\)\n {2}ok {4}git log/)
      assert.strictEqual(failing!.code, 14)
      const report = json<{ passed: boolean; checks: Array<{ command: string; ok: boolean; output: string }> }>(
        failing!.stdout
      )
      assert.isFalse(report.passed)
      assert.deepInclude(report.checks[1]!, { command: "echo broken; exit 3", ok: false, output: "broken\n" })
      assert.strictEqual(
        failing!.stderr,
        "flotta: ChecksFailed: 1 of 2 checks failed on main: echo broken; exit 3\n"
      )
    })
  })
})
