/**
 * Sandboxed runs against the real pinned `claude` binary and the fake Messages API, offline: the CLI's own OS
 * sandbox (bubblewrap and socat) as flotta turns it on. A full-permission run in its worktree works there and
 * nowhere else, reaches no local port it was not given (and one it was given, through the CLI's proxy), cannot ask
 * its way out of the sandbox, and never starts where the sandbox cannot run. Each refusal has an unsandboxed
 * control beside it: the same command does its thing without the sandbox.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as Flotta from "../packages/core/src/Flotta.js"
import type { RunOptions } from "../packages/core/src/Run.js"
import * as Sandbox from "../packages/core/src/Sandbox.js"
import { newRepo } from "./support/git.js"
import { CLAUDE, useOfflineApi } from "./support/realCli.js"

const offline = useOfflineApi("flotta-sandbox")
const realFleet = Flotta.layer({ claudePath: CLAUDE }).pipe(Layer.provide(NodeContext.layer))

/** A directory outside every worktree, as the run's target to escape to. */
const outsideDir = (name: string) => {
  const dir = path.join(offline.root, "outside", name)
  fs.mkdirSync(dir, { recursive: true })
  return dir
}

/** A directory for PATH holding only these tools: `name` → the executable it links to, or a script's text. */
const toolDir = (name: string, tools: Record<string, { readonly link: string } | { readonly script: string }>) => {
  const dir = path.join(offline.root, "bin", name)
  fs.mkdirSync(dir, { recursive: true })
  for (const [tool, what] of Object.entries(tools)) {
    const file = path.join(dir, tool)
    if ("link" in what) fs.symlinkSync(what.link, file)
    else fs.writeFileSync(file, what.script, { mode: 0o755 })
  }
  return dir
}

/** A TCP server on 127.0.0.1 that answers any request with "hello", and counts who connected. */
const tcpServer = Effect.acquireRelease(
  Effect.async<
    { readonly port: number; readonly connections: () => number; readonly close: () => Promise<void> }
  >(
    (resume) => {
      let connections = 0
      const sockets = new Set<net.Socket>()
      const server = net.createServer((socket) => {
        connections++
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
        socket.on("error", () => undefined)
        socket.end("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          port: (server.address() as net.AddressInfo).port,
          connections: () => connections,
          close: () => {
            for (const socket of sockets) socket.destroy()
            return new Promise<void>((done) => server.close(() => done()))
          }
        })))
    }
  ),
  ({ close }) => Effect.promise(close)
)

const errorOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a typed failure, got ${String(exit)}`)
}

/** A full-permission run in its own worktree of `repo`, with the offline environment. */
const fullRun = (repo: string, name: string, prompt: string, more: Partial<RunOptions> = {}) =>
  Effect.flatMap(Flotta.Flotta, (fleet) =>
    fleet.run({
      prompt,
      cwd: repo,
      worktree: true,
      name,
      permission: "full",
      ...more,
      env: { ...offline.env, ...more.env }
    }))

/** The lines `name=<status>` a command printed, as a record. */
const statuses = (text: string) =>
  Object.fromEntries([...text.matchAll(/(\w+)=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]))

describe("sandboxed runs with the real claude CLI", () => {
  it.scopedLive("a full-permission run works in its worktree, and writes nowhere else (Bash, Write, or asking out)", () =>
    Effect.gen(function*() {
      const repo = newRepo(path.join(offline.root, "repos", "writes"))
      const outside = outsideDir("writes")
      const worktree = (name: string) => path.join(repo, ".claude", "worktrees", name)

      // Bash: inside its worktree it writes; outside, the file system is read-only to it.
      const bash = yield* fullRun(
        repo,
        "boxed-bash",
        `BASH touch inside.txt; echo in=$?; touch ${outside}/bash.txt 2>/dev/null; echo out=$?`,
        { sandbox: true }
      )
      assert.deepStrictEqual(statuses(bash.text), { in: 0, out: 1 }, bash.text)
      assert.isTrue(fs.existsSync(path.join(worktree("boxed-bash"), "inside.txt")), "its work is done in its worktree")
      assert.isFalse(fs.existsSync(path.join(outside, "bash.txt")))
      // The control: the same command, unsandboxed, writes outside.
      const open = yield* fullRun(repo, "open-bash", `BASH touch ${outside}/control.txt; echo out=$?`)
      assert.deepStrictEqual(statuses(open.text), { out: 0 }, open.text)
      assert.isTrue(fs.existsSync(path.join(outside, "control.txt")))

      // The Write tool runs inside the CLI, outside its OS sandbox: flotta's guard holds it to the same paths.
      const inside = path.join(worktree("boxed-write"), "by-write.txt")
      const wrote = yield* fullRun(repo, "boxed-write", `WRITE ${inside} kept`, { sandbox: true })
      assert.strictEqual(wrote.text, `WROTE ${inside}`)
      assert.strictEqual(fs.readFileSync(inside, "utf8"), "kept\n")
      const refused = yield* fullRun(repo, "boxed-write-out", `WRITE ${outside}/by-write.txt nope`, { sandbox: true })
      assert.match(refused.text, /^DENIED: Permission denied by flotta's sandbox: Write of .* is outside the paths/)
      assert.isFalse(fs.existsSync(path.join(outside, "by-write.txt")))
      // Allowed by name (`--allowedTools Write` would let the CLI write anywhere unasked), it still reaches the guard.
      const listed = yield* fullRun(repo, "boxed-write-listed", `WRITE ${outside}/listed.txt nope`, {
        permission: { allow: ["Read", "Write", "Edit"] },
        sandbox: true
      })
      assert.match(listed.text, /^DENIED: Permission denied by flotta's sandbox/)
      assert.isFalse(fs.existsSync(path.join(outside, "listed.txt")))

      // The model asking to leave the sandbox (the Bash tool's dangerouslyDisableSandbox) is not let out.
      const escape = yield* fullRun(
        repo,
        "boxed-escape",
        `BASH_UNSANDBOXED touch ${outside}/escaped.txt 2>/dev/null; echo out=$?`,
        { sandbox: true }
      )
      assert.deepStrictEqual(statuses(escape.text), { out: 1 }, escape.text)
      assert.isFalse(fs.existsSync(path.join(outside, "escaped.txt")))

      // `writable` adds a path.
      const extra = outsideDir("writable")
      const added = yield* fullRun(repo, "boxed-extra", `BASH touch ${extra}/ok.txt; echo out=$?`, {
        sandbox: { writable: [extra] }
      })
      assert.deepStrictEqual(statuses(added.text), { out: 0 }, added.text)
      assert.isTrue(fs.existsSync(path.join(extra, "ok.txt")))
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("it reaches no local port it was not given; one given as host:port it reaches through the proxy", () =>
    Effect.gen(function*() {
      const repo = newRepo(path.join(offline.root, "repos", "network"))
      const { connections, port } = yield* tcpServer
      const url = `http://127.0.0.1:${port}/`
      // Inside the sandbox NO_PROXY lists loopback, so plain curl dials directly: the sandbox has no network of its
      // own. Without NO_PROXY, curl goes through the CLI's proxy, which refuses a host that is not allowed.
      const command = `BASH curl -fsS -m 5 -o /dev/null ${url} 2>/dev/null; echo direct=$?; ` +
        `env -u NO_PROXY -u no_proxy curl -fsS -m 5 ${url} 2>/dev/null; echo " proxied=$?"`

      const refused = yield* fullRun(repo, "net-refused", command, { sandbox: true })
      const refusedStatus = statuses(refused.text)
      assert.notStrictEqual(refusedStatus["direct"], 0, refused.text)
      assert.notStrictEqual(refusedStatus["proxied"], 0, refused.text)
      assert.strictEqual(connections(), 0, "nothing reached the server")

      const allowed = yield* fullRun(repo, "net-allowed", command, {
        sandbox: { network: { allow: [`127.0.0.1:${port}`] } }
      })
      assert.match(allowed.text, /hello/, allowed.text)
      assert.strictEqual(statuses(allowed.text)["proxied"], 0, allowed.text)
      assert.notStrictEqual(statuses(allowed.text)["direct"], 0, "still no direct network: only the proxy")
      assert.strictEqual(connections(), 1)

      // The control: unsandboxed, the plain connection is made.
      const open = yield* fullRun(repo, "net-open", command)
      assert.strictEqual(statuses(open.text)["direct"], 0, open.text)
      assert.isAbove(connections(), 1)
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("a sandbox never widens the permission: Bash it does not allow is denied, though the sandbox would allow it", () =>
    Effect.gen(function*() {
      const repo = newRepo(path.join(offline.root, "repos", "narrow"))
      const worktree = path.join(repo, ".claude", "worktrees", "narrow")
      // The CLI could auto-allow sandboxed Bash (autoAllowBashIfSandboxed); flotta keeps every call under the permission.
      const result = yield* fullRun(repo, "narrow", "BASH touch inside.txt", {
        permission: { allow: ["Read", "Bash(echo *)"] },
        sandbox: true
      })
      assert.match(result.text, /^DENIED: Permission denied by flotta: Bash is not in this agent's allow list/)
      assert.isFalse(fs.existsSync(path.join(worktree, "inside.txt")))
      const echoed = yield* fullRun(repo, "narrow-echo", "BASH echo allowed", {
        permission: { allow: ["Read", "Bash(echo *)"] },
        sandbox: true
      })
      assert.strictEqual(echoed.text, "BASH_RESULT: allowed")
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("SandboxUnavailable when bwrap is not on the child's PATH: no worktree, no process, no request", () =>
    Effect.gen(function*() {
      const repo = newRepo(path.join(offline.root, "repos", "unavailable"))
      const PATH = toolDir("no-bwrap", { socat: { link: "/usr/bin/socat" } })
      const requests = offline.api.requests.length
      const error = errorOf(
        yield* Effect.exit(fullRun(repo, "boxed-missing", "ECHO never", { sandbox: true, env: { PATH } }))
      )
      assert.strictEqual(error._tag, "SandboxUnavailable")
      assert.match(error.message, /bwrap \(bubblewrap\) is not on PATH; install it: .*bubblewrap/)
      assert.isFalse(fs.existsSync(path.join(repo, ".claude", "worktrees", "boxed-missing")))
      assert.strictEqual(offline.api.requests.length, requests)
      // The same PATH, unsandboxed, is no problem.
      const open = yield* fullRun(repo, "open-missing", "ECHO fine", { env: { PATH } })
      assert.strictEqual(open.text, "ECHO: fine")
    }).pipe(Effect.provide(realFleet)))

  it.scopedLive("a sandbox that fails when it runs fails closed: the command does not run at all", () =>
    Effect.gen(function*() {
      const repo = newRepo(path.join(offline.root, "repos", "broken"))
      const outside = outsideDir("broken")
      // A bwrap that is there (so both checks pass) but cannot make a sandbox, as on a host that forbids namespaces.
      const broken = toolDir("broken-bwrap", {
        bwrap: { script: "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n" }
      })
      const result = yield* fullRun(repo, "boxed-broken", `BASH touch ${outside}/ran.txt`, {
        sandbox: true,
        env: { PATH: `${broken}${path.delimiter}${process.env["PATH"]}` }
      })
      assert.match(result.text, /No permissions to create new namespace/)
      assert.isFalse(fs.existsSync(path.join(outside, "ran.txt")))
    }).pipe(Effect.provide(realFleet)))

  it("the settings flotta passes make the CLI itself refuse to start without its sandbox (failIfUnavailable)", async () => {
    const cwd = offline.workdir("refuses")
    const PATH = toolDir("cli-no-bwrap", { socat: { link: "/usr/bin/socat" } })
    const settings = Sandbox.settingsArgs(Sandbox.confinement(true, cwd)!, [])
    const ran = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
      execFile(
        CLAUDE,
        ["-p", "ECHO never", "--output-format", "json", ...settings],
        { cwd, env: { ...process.env, ...offline.env, PATH }, timeout: 60_000 },
        (error, _stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number), stderr })
      )
    )
    assert.strictEqual(ran.code, 1)
    assert.include(ran.stderr, "bubblewrap (bwrap) not installed")
    assert.include(ran.stderr, "Refusing to start without a working sandbox")
  })
})
