/**
 * A shell `flotta run` is recorded in the project's store, as a serve's run is, and `flotta run --detach` starts one
 * inside the serve. The compiled binary as a child process, the real claude CLI against the built-in simulator, real
 * git: with no serve (the run imports its record itself; `flotta runs`, `runs NAME` and `diff` read the store, also
 * after gc), with the store held by a host that does not import it (the record waits in the inbox, readers see it
 * there, and the serve that starts next imports it), and with a serve up (shell runs at once, imported by the serve:
 * its runs, diff, costs, report log and dashboard page show them); a name the store holds is refused before running.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlotta, runFlottaAll } from "./support/cli.js"
import { newRepo } from "./support/git.js"
import { freePort } from "./support/ports.js"
import { type Served, startServe } from "./support/serve.js"
import { eventually } from "./support/waiting.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-recorded-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

/** A repository with a config whose serve listens on a port of its own, with the dashboard beside MCP. */
const project = async (name: string) => {
  const root = newRepo(path.join(dir, name))
  const port = await freePort()
  fs.writeFileSync(path.join(root, "flotta.config.json"), JSON.stringify({ mcp: { port }, dashboard: {} }))
  return { root, port, db: path.join(root, ".flotta", "state.db"), inbox: path.join(root, ".flotta", "state.db.inbox") }
}

/** A worktree run that writes one file, as a newcomer's first run would. */
const writing = (root: string, name: string, file: string) => [
  "run",
  "--simulate",
  "--worktree",
  "--name",
  name,
  "--allow",
  "Read,Write",
  `WRITE ${root}/.claude/worktrees/${name}/${file} ${name} was here`
]

const serve = (root: string) => startServe(root, { stdin: "ignore", timeout: 120_000 })

/** SIGTERM: the serve ends cleanly. */
const stop = async (server: Served) => assert.strictEqual(await server.stop(60_000), 0, server.out.stderr)

describe("a shell run is recorded in the project's store", () => {
  it("with no serve, with the store held, then with a serve up: runs, diff, costs and the log show every run", {
    timeout: 420_000
  }, async () => {
    const { db, inbox, port, root } = await project("recorded")

    // No serve: the run imports its own record.
    const first = await runFlotta(root, writing(root, "typo-fix", "notes.md"))
    assert.strictEqual(first.code, 0, first.stderr)
    assert.include(
      first.stderr,
      `flotta: recorded in the store ${db}: \`flotta runs typo-fix\`, \`flotta diff typo-fix\``
    )
    assert.deepStrictEqual(fs.readdirSync(inbox), [], "nothing waits")
    const listed = await runFlotta(root, ["runs"])
    assert.strictEqual(listed.code, 0, listed.stderr)
    assert.include(listed.stderr, `reading the store ${db}`)
    assert.match(
      listed.stdout,
      /^typo-fix +run +succeeded +[\d-]+ [\d:]+ +[\d.]+ m?s +\$\d+\.\d{4} +worktree-typo-fix$/m
    )
    const outcome = await runFlotta(root, ["runs", "typo-fix"])
    assert.strictEqual(outcome.code, 0, outcome.stderr)
    assert.match(outcome.stdout, /^WROTE .*notes\.md\n— \$\d+\.\d{4} · /)
    assert.strictEqual((await runFlotta(root, ["gc", "--force"])).code, 0)
    const diffed = await runFlotta(root, ["diff", "typo-fix", "--store", ".flotta/state.db"])
    assert.strictEqual(diffed.code, 0, diffed.stderr)
    assert.match(diffed.stdout, /^typo-fix: worktree-typo-fix against [0-9a-f]{12}\n {2}\+1 +-0 +notes\.md\n/)
    assert.include(diffed.stdout, "+typo-fix was here")

    // A name the store holds is refused before anything runs.
    const again = await runFlotta(root, ["run", "--simulate", "--name", "typo-fix", "ECHO again"])
    assert.strictEqual(again.code, 12, again.stderr)
    assert.match(again.stderr, /RunNameTaken: the run "typo-fix" cannot be recorded: the store has a run of that name/)
    assert.strictEqual(again.stdout, "")

    // Shell runs at once with no serve: each imports its record in turn (the store held only for that moment).
    const together = await runFlottaAll(
      root,
      [1, 2, 3].map((i) => ["run", "--simulate", "--name", `alone-${i}`, `ECHO ${i}`])
    )
    for (const ran of together) assert.strictEqual(ran.code, 0, ran.stderr)
    for (const ran of together) assert.include(ran.stderr, `flotta: recorded in the store ${db}: \`flotta runs alone-`)
    const alone = await runFlotta(root, ["runs", "--json", "--store", db])
    const stored = (JSON.parse(alone.stdout) as { runs: Array<{ name: string }> }).runs.map((r) => r.name).sort()
    assert.deepStrictEqual(stored, ["alone-1", "alone-2", "alone-3", "typo-fix"])

    // The store held by a host that does not import (a live pid's lock): the record waits in the inbox, and is read
    // there; the serve that starts next imports it.
    fs.writeFileSync(`${db}.lock`, JSON.stringify({ pid: process.pid, startTicks: null, host: "t", since: "now" }))
    const held = await runFlotta(root, ["run", "--simulate", "--name", "waiting", "ECHO kept for later"])
    assert.strictEqual(held.code, 0, held.stderr)
    assert.strictEqual(held.stdout, "ECHO: kept for later\n")
    assert.match(
      held.stderr,
      /flotta: recorded in .*state\.db\.inbox\/waiting\.[0-9a-f]{8}\.json, not in the store yet/
    )
    assert.include(held.stderr, `the store is held by pid ${process.pid}`)
    const seen = await runFlotta(root, ["runs", "waiting", "--store", db])
    assert.strictEqual(seen.code, 0, seen.stderr)
    assert.match(seen.stdout, /^ECHO: kept for later\n/)
    fs.rmSync(`${db}.lock`)

    const server = await serve(root)
    try {
      assert.deepStrictEqual(fs.readdirSync(inbox), [], "the serve imported it as it started")
      const both = await runFlotta(root, ["runs", "--json"])
      assert.strictEqual(both.code, 0, both.stderr)
      const names = (JSON.parse(both.stdout) as { runs: Array<{ name: string; state: string }> }).runs
      assert.strictEqual(names[0]!.name, "waiting", "newest first")
      assert.deepStrictEqual(names.map((r) => r.name).sort(), ["alone-1", "alone-2", "alone-3", "typo-fix", "waiting"])
      assert.isTrue(names.every((r) => r.state === "succeeded"))

      // Shell runs at once beside the serve: none blocks, each is imported by the serve.
      const [one, two, three] = await runFlottaAll(root, [
        writing(root, "beside-1", "one.txt"),
        writing(root, "beside-2", "two.txt"),
        ["run", "--simulate", "--name", "beside-3", "ECHO three"]
      ])
      for (const [ran, name] of [[one!, "beside-1"], [two!, "beside-2"], [three!, "beside-3"]] as const) {
        assert.strictEqual(ran.code, 0, ran.stderr)
        assert.include(
          ran.stderr,
          `flotta: recorded in the store ${db}: \`flotta runs ${name}\``,
          ran.stderr
        )
      }
      const stat = await runFlotta(root, ["diff", "beside-2", "--stat"])
      assert.strictEqual(stat.code, 0, stat.stderr)
      assert.match(stat.stdout, /^beside-2: worktree-beside-2 against [0-9a-f]{12}\n {2}\+1 +-0 +two\.txt\n/)
      const costs = await runFlotta(root, ["costs", "--by", "run", "--json"])
      assert.strictEqual(costs.code, 0, costs.stderr)
      const byRun = (JSON.parse(costs.stdout) as { groups: Array<{ key: string }> }).groups.map((g) => g.key).sort()
      assert.deepStrictEqual(byRun, [
        "alone-1",
        "alone-2",
        "alone-3",
        "beside-1",
        "beside-2",
        "beside-3",
        "typo-fix",
        "waiting"
      ])
      const finished = await runFlotta(root, ["reports", "--agent", "beside-3", "--json"])
      const kinds = finished.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { kind: string }).kind)
      assert.includeMembers(kinds, ["spawned", "result", "run_finished"])
      const page = await fetch(`http://127.0.0.1:${port}/runs/beside-1`)
      assert.strictEqual(page.status, 200)
      assert.include(await page.text(), "one.txt")
      assert.notInclude(server.out.stderr, "StoreLocked")
    } finally {
      await stop(server)
    }
  })
})

describe("flotta run --detach", () => {
  it("starts the run inside the serve and prints its name; with no serve, ServerUnreachable", {
    timeout: 300_000
  }, async () => {
    const { root } = await project("detached")
    const server = await serve(root)
    try {
      const started = await runFlotta(root, [
        "run",
        "--detach",
        "--worktree",
        "--name",
        "over-there",
        "--allow",
        "Read,Write",
        "--timeout",
        "2m",
        `WRITE ${root}/.claude/worktrees/over-there/far.txt far`
      ])
      assert.strictEqual(started.code, 0, started.stderr)
      assert.strictEqual(started.stdout, "over-there\n")
      assert.match(
        started.stderr,
        /^flotta: over-there runs in the serve at http:\/\/127\.0\.0\.1:\d+\/mcp: `flotta runs over-there`/
      )
      const done = await eventually(
        () => runFlotta(root, ["runs", "over-there"]),
        (ran) => ran.code === 0,
        120_000,
        "the detached run to finish"
      )
      assert.match(done.stdout, /^WROTE .*far\.txt\n/)
      const diff = await runFlotta(root, ["diff", "over-there", "--stat"])
      assert.match(diff.stdout, /\+1 +-0 +far\.txt/)
      const refused = await runFlotta(root, ["run", "--detach", "--ask", "Bash", "x"])
      assert.strictEqual(refused.code, 2)
      assert.match(refused.stderr, /^flotta: --ask: asks you at this terminal, and a detached run has none/)
    } finally {
      await stop(server)
    }
    const unreachable = await runFlotta(root, ["run", "--detach", "ECHO nobody"])
    assert.strictEqual(unreachable.code, 12, unreachable.stderr)
    assert.match(unreachable.stderr, /^flotta: ServerUnreachable: no flotta server answered at /)
    assert.strictEqual(unreachable.stdout, "")
  })
})
