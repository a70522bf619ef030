/**
 * Sandboxed agents without a process: the option's Schema and its errors, the `--settings` and flags a sandboxed
 * child starts with, the host's guard for the tools the CLI's sandbox does not cover, the machine check (injected,
 * never the real machine), the in-memory CLI's model of it, and the store's round trip across a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { buildArgs } from "../src/Agent.js"
import { Flotta } from "../src/Flotta.js"
import * as Sandbox from "../src/Sandbox.js"
import * as Spec from "../src/Spec.js"
import * as Testing from "../src/Testing.js"
import type { Shared } from "./support.js"
import { host as hostOf } from "./support.js"

const failure = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error as { _tag: string; message: string } : undefined

const tempDir = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-sandbox-")))

/** The value after `--settings` in argv, parsed. */
const settingsIn = (args: ReadonlyArray<string>) => {
  const at = args.indexOf("--settings")
  return at === -1 ? undefined : JSON.parse(args[at + 1]!) as Record<string, unknown>
}

const valueOf = (args: ReadonlyArray<string>, flag: string) => args[args.indexOf(flag) + 1]

describe("the sandbox option", () => {
  it("true, false and the object form; writable paths made absolute from the cwd, hosts kept once", () => {
    assert.deepStrictEqual(Sandbox.normalize(true, "/w"), Either.right(true))
    assert.deepStrictEqual(Sandbox.normalize(false, "/w"), Either.right(undefined))
    assert.deepStrictEqual(Sandbox.normalize(undefined, "/w"), Either.right(undefined))
    assert.deepStrictEqual(
      Sandbox.normalize(
        { network: { allow: ["github.com", "*.github.com", "127.0.0.1:8080", "github.com"] }, writable: ["out", "/c"] },
        "/w"
      ),
      Either.right({ network: { allow: ["github.com", "*.github.com", "127.0.0.1:8080"] }, writable: ["/w/out", "/c"] })
    )
  })

  it("a bad value names its path under sandbox and what is wrong with it", () => {
    const bad = (input: unknown) => Either.getLeft(Sandbox.normalize(input, "/w")).pipe(Option.getOrThrow)
    assert.deepInclude(bad({ network: { allow: ["https://github.com"] } }), { path: "sandbox.network.allow[0]" })
    assert.include(bad({ network: { allow: ["https://github.com"] } }).reason, "is a URL or a path, not a host")
    assert.include(bad({ network: { allow: ["ok.com", "*"] } }).reason, "would allow every host")
    assert.deepInclude(bad({ network: { allow: ["ok.com", "*"] } }), { path: "sandbox.network.allow[1]" })
    assert.include(bad({ network: { allow: ["db:70000"] } }).reason, "has a port outside 1-65535")
    assert.include(bad({ network: { allow: ["a b"] } }).reason, "is not a host such as github.com")
    assert.include(bad({ writable: ["~/cache"] }).reason, "starts with ~, which is not expanded")
    assert.include(bad({ writable: [""] }).reason, "an empty path")
    assert.deepInclude(bad({ network: { allowed: ["github.com"] } }), { path: "sandbox.network.allowed" })
    assert.strictEqual(bad("yes").path, "sandbox")
    for (const host of ["github.com", "*.github.com", "api.github.com:443", "127.0.0.1:3000", "localhost"]) {
      assert.isUndefined(Sandbox.hostProblem(host), host)
    }
  })

  it("in config: on entries and in fleetDefaults (false turns it off), bad hosts named by path, sessions unchanged", () => {
    const fleet = Spec.readFleet({
      fleetDefaults: { sandbox: true },
      agents: [
        { name: "a" },
        { name: "b", sandbox: false },
        { name: "r", lifecycle: "run", permission: "full", sandbox: { network: { allow: ["github.com"] } } },
        { name: "bad", lifecycle: "run", sandbox: { network: { allow: ["github.com/cli"] } } },
        { name: "w", permission: "full", sandbox: true }
      ]
    })
    assert.deepStrictEqual(fleet.sessions.map((s) => [s.name, s.sandbox]), [["a", true], ["b", false]])
    assert.deepStrictEqual(fleet.templates.map((s) => [s.name, s.sandbox]), [
      ["r", { network: { allow: ["github.com"] } }]
    ])
    assert.deepStrictEqual(fleet.rejected.map((r) => r.path), [
      "agents[3].sandbox.network.allow[0]",
      "agents[4].permission"
    ])
    assert.include(fleet.rejected[0]!.message, "\"github.com/cli\" is a URL or a path")
    // A sandbox does not make a write-capable session acceptable: a session still has no worktree.
    assert.match(fleet.rejected[1]!.message, /write-capable session is refused/)
  })
})

describe("what a sandboxed child starts with", () => {
  const sandbox = Sandbox.confinement({ network: { allow: ["github.com"] }, writable: ["/cache"] }, "/w")!

  it("settings: Bash sandboxed, never auto-allowed nor let out, strict hosts, the extra paths, a hard failure", () => {
    assert.deepStrictEqual(sandbox, { cwd: "/w", writable: ["/w", "/cache"], hosts: ["github.com"] })
    assert.deepStrictEqual(Sandbox.settings(sandbox), {
      sandbox: {
        enabled: true,
        failIfUnavailable: true,
        autoAllowBashIfSandboxed: false,
        allowUnsandboxedCommands: false,
        network: { allowedDomains: ["github.com"], strictAllowlist: true },
        filesystem: { allowWrite: ["/cache"] }
      }
    })
    assert.deepStrictEqual(
      settingsIn(buildArgs({ cwd: "/w", sandbox: true }, "full", { id: "s", resume: false }))?.["sandbox"],
      Sandbox.settings({ cwd: "/w", writable: ["/w"], hosts: [] }).sandbox
    )
    assert.isUndefined(settingsIn(buildArgs({ cwd: "/w" }, "full", { id: "s", resume: false })))
  })

  it("the guarded tools are offered but never pre-allowed whole: each call reaches the host (scoped rules stay)", () => {
    const permission = { allow: ["Read", "Write", "Edit(src/**)", "WebFetch", "Bash"] }
    const args = buildArgs({ cwd: "/w", sandbox: true }, permission, { id: "s", resume: false })
    assert.strictEqual(valueOf(args, "--tools"), "Read,Write,Edit,WebFetch,Bash")
    assert.strictEqual(valueOf(args, "--allowedTools"), "Read,Edit(src/**),Bash")
    const open = buildArgs({ cwd: "/w" }, permission, { id: "s", resume: false })
    assert.strictEqual(valueOf(open, "--allowedTools"), "Read,Write,Edit(src/**),WebFetch,Bash")
    assert.strictEqual(
      valueOf(buildArgs({ sandbox: true }, "ask", { id: "s", resume: false }), "--allowedTools"),
      "Read,Glob,Grep"
    )
  })

  it("settings among extraArgs are merged into one --settings: their keys stay, the sandbox is the option's", () => {
    const args = buildArgs(
      {
        cwd: "/w",
        sandbox: true,
        extraArgs: [
          "--settings",
          "{\"model\":\"opus\",\"sandbox\":{\"enabled\":false}}",
          "--settings={\"x\":1}",
          "--bare"
        ]
      },
      "full",
      { id: "s", resume: false }
    )
    assert.strictEqual(args.filter((a) => a.startsWith("--settings")).length, 1)
    assert.deepInclude(settingsIn(args), { model: "opus", x: 1 })
    assert.strictEqual((settingsIn(args)!["sandbox"] as { enabled: boolean }).enabled, true)
    assert.strictEqual(args.at(-1), "--bare")
    // Without a sandbox the further flags are left as they are.
    const plain = buildArgs({ extraArgs: ["--settings", "s.json"] }, "full", { id: "s", resume: false })
    assert.deepStrictEqual(plain.slice(-2), ["--settings", "s.json"])
    assert.isString(Sandbox.extraArgsProblem(["--settings", "s.json"]))
    assert.isUndefined(Sandbox.extraArgsProblem(["--settings", "{}"]))
  })
})

describe("the host's guard (the tools the CLI's sandbox does not cover)", () => {
  it("file tools write only under the writable paths, symbolic links resolved; WebFetch only to allowed hosts", () => {
    const root = tempDir()
    const work = path.join(root, "work")
    const cache = path.join(root, "cache")
    const outside = path.join(root, "outside")
    for (const dir of [work, cache, outside]) fs.mkdirSync(dir)
    fs.symlinkSync(outside, path.join(work, "escape"))
    const c = Sandbox.confinement({ writable: [cache], network: { allow: ["*.example.com", "db.local:5432"] } }, work)!
    assert.isUndefined(Sandbox.refusal(c, "Write", { file_path: path.join(work, "new", "file.txt") }))
    assert.isUndefined(Sandbox.refusal(c, "Edit", { file_path: "relative.txt" }))
    assert.isUndefined(Sandbox.refusal(c, "Write", { file_path: path.join(cache, "x") }))
    assert.include(
      Sandbox.refusal(c, "Write", { file_path: path.join(outside, "x") }),
      `Write of ${path.join(outside, "x")} is outside the paths this agent may write (${work}, ${cache})`
    )
    assert.isString(Sandbox.refusal(c, "Write", { file_path: path.join(work, "escape", "x") }), "through a link")
    assert.isString(Sandbox.refusal(c, "Edit", { file_path: path.join(work, "..", "outside", "x") }))
    assert.isString(Sandbox.refusal(c, "NotebookEdit", { notebook_path: "/etc/x.ipynb" }))
    assert.isUndefined(Sandbox.refusal(c, "WebFetch", { url: "https://api.example.com/x" }))
    assert.isUndefined(Sandbox.refusal(c, "WebFetch", { url: "http://db.local:5432/" }))
    assert.include(
      Sandbox.refusal(c, "WebFetch", { url: "https://example.com/" }),
      "WebFetch of example.com is outside"
    )
    assert.isString(Sandbox.refusal(c, "WebFetch", { url: "http://db.local:5433/" }))
    assert.include(Sandbox.refusal(c, "SandboxNetworkAccess", { host: "evil.test" }), "evil.test is outside the hosts")
    assert.isUndefined(Sandbox.refusal(c, "Bash", { command: "touch /etc/x" }), "Bash is the OS sandbox's")
    assert.isUndefined(Sandbox.refusal(c, "Read", { file_path: "/etc/passwd" }))
  })
})

describe("whether the sandbox can run on a machine (injected: the real one is never looked at here)", () => {
  const linux = (tools: ReadonlyArray<string>, osRelease = "ID=debian"): Sandbox.Machine => ({
    platform: "linux",
    path: "/usr/local/bin:/usr/bin",
    isExecutable: (file) => tools.includes(file),
    osRelease
  })

  it("Linux needs bwrap and socat on the child's PATH; the message names what is missing and its install", () => {
    assert.isTrue(Option.isNone(Sandbox.availability(linux(["/usr/bin/bwrap", "/usr/local/bin/socat"]))))
    assert.deepStrictEqual(
      Sandbox.availability(linux(["/usr/bin/socat"])),
      Option.some({
        reason: "bwrap (bubblewrap) is not on PATH",
        missing: ["bwrap"],
        install: "apt-get install -y bubblewrap"
      })
    )
    const none = Option.getOrThrow(Sandbox.availability(linux([], "ID=fedora\nID_LIKE=\"rhel centos\"")))
    assert.strictEqual(none.reason, "bwrap (bubblewrap) and socat are not on PATH")
    assert.strictEqual(none.install, "dnf install -y bubblewrap socat")
    assert.strictEqual(Sandbox.installCommand("ID=ubuntu\nID_LIKE=debian", ["socat"]), "apt-get install -y socat")
    assert.strictEqual(Sandbox.installCommand("ID=alpine", ["socat"]), "apk add socat")
  })

  it("macOS has Seatbelt built in; other platforms are refused, saying why", () => {
    const mac = (present: boolean): Sandbox.Machine => ({
      platform: "darwin",
      path: "",
      isExecutable: (file) => present && file === "/usr/bin/sandbox-exec",
      osRelease: ""
    })
    assert.isTrue(Option.isNone(Sandbox.availability(mac(true))))
    assert.include(Option.getOrThrow(Sandbox.availability(mac(false))).reason, "/usr/bin/sandbox-exec")
    const windows = Option.getOrThrow(Sandbox.availability({ ...mac(true), platform: "win32" }))
    assert.include(windows.reason, "no sandbox flotta can use on win32")
    assert.strictEqual(windows.install, "")
  })

  it.effect("SandboxUnavailable names the agent, the missing tool and the command that installs it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Sandbox.check("fixer", linux(["/usr/bin/socat"])))
      assert.strictEqual(error._tag, "SandboxUnavailable")
      assert.strictEqual(
        error.message,
        "\"fixer\" is sandboxed, but the sandbox cannot run on this machine: bwrap (bubblewrap) is not on " +
          "PATH; install it: apt-get install -y bubblewrap (it was not started unsandboxed)"
      )
    }))
})

describe("Testing: the in-memory CLI models the sandbox", () => {
  const writer: Testing.Model = ({ prompt, sandbox }) =>
    prompt.startsWith("write ")
      ? Testing.toolUse("Write", { file_path: prompt.slice(6), content: "x" })
      : prompt.startsWith("fetch ")
      ? Testing.toolUse("WebFetch", { url: prompt.slice(6), prompt: "?" })
      : JSON.stringify(sandbox)

  it.effect("a sandboxed agent sees its sandbox; the guard denies what it does not allow, even under full", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const info = yield* fleet.spawn("boxed", {
        cwd: "/w",
        permission: "full",
        sandbox: { writable: ["out"], network: { allow: ["github.com"] } }
      })
      assert.deepStrictEqual(info.sandbox, { writable: ["/w/out"], network: { allow: ["github.com"] } })
      assert.deepStrictEqual(JSON.parse(yield* fleet.ask("boxed", "where")), {
        writable: ["/w", "/w/out"],
        hosts: ["github.com"]
      })
      assert.strictEqual(yield* fleet.ask("boxed", "write /w/a.txt"), "Write done")
      assert.strictEqual(yield* fleet.ask("boxed", "write /w/out/b.txt"), "Write done")
      assert.match(
        yield* fleet.ask("boxed", "write /etc/c.txt"),
        /^Write refused: Permission denied by flotta's sandbox/
      )
      assert.strictEqual(yield* fleet.ask("boxed", "fetch https://github.com/x"), "WebFetch done")
      assert.match(yield* fleet.ask("boxed", "fetch https://evil.test/"), /WebFetch of evil.test is outside/)
      const denied = (yield* fleet.transcript("boxed"))[3]!.permissions[0]!
      assert.deepInclude(denied, { tool: "Write", decision: "deny", by: "sandbox" })
      // Not sandboxed: the same model sees no sandbox, and full permission writes anywhere.
      yield* fleet.spawn("open", { cwd: "/w", permission: "full" })
      assert.strictEqual(yield* fleet.ask("open", "where"), "null")
      assert.strictEqual(yield* fleet.ask("open", "write /etc/c.txt"), "Write done")
    }).pipe(Effect.provide(Testing.layer({ model: writer }))))

  it.effect("what the sandbox refuses never waits for a human: no approval is asked", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("asker", { cwd: "/w", permission: { allow: ["Read"], ask: ["Write"] }, sandbox: true })
      assert.match(yield* fleet.ask("asker", "write /etc/x"), /sandbox/)
      assert.deepStrictEqual(yield* fleet.approvals({ all: true }), [])
    }).pipe(Effect.provide(Testing.layer({ model: writer }))))

  it.effect("sandbox: \"unavailable\": a sandboxed agent or run fails with SandboxUnavailable, never started", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const spawned = failure(yield* Effect.exit(fleet.spawn("boxed", { sandbox: true })))
      assert.strictEqual(spawned?._tag, "SandboxUnavailable")
      assert.include(spawned?.message, "apt-get install -y bubblewrap socat")
      assert.deepStrictEqual((yield* fleet.list()).map((a) => a.name), [])
      const ran = failure(yield* Effect.exit(fleet.run({ prompt: "hi", sandbox: true, name: "boxed-run" })))
      assert.strictEqual(ran?._tag, "SandboxUnavailable")
      const errors = (yield* fleet.reports({ agent: "boxed-run", kinds: ["error", "spawned"] })).entries
      assert.deepStrictEqual(errors.map((e) => e.kind), ["error"])
      // Unsandboxed agents are unaffected, and a bad option is InvalidSpec before any machine check.
      assert.strictEqual(yield* fleet.ask((yield* fleet.spawn("open")).name, "hi"), "echo: hi")
      const bad = failure(yield* Effect.exit(fleet.spawn("bad", { sandbox: { writable: ["~/x"] } })))
      assert.deepInclude(bad as unknown as Record<string, unknown>, {
        _tag: "InvalidSpec",
        path: "sandbox.writable[0]"
      })
      const file = failure(
        yield* Effect.exit(fleet.spawn("file", { sandbox: true, extraArgs: ["--settings", "mine.json"] }))
      )
      assert.deepInclude(file as unknown as Record<string, unknown>, { _tag: "InvalidSpec", path: "extraArgs" })
    }).pipe(Effect.provide(Testing.layer({ sandbox: "unavailable" }))))
})

describe("the store keeps the sandbox", () => {
  /** One host's life over the shared disk and store file, its model answering with its sandbox. */
  const host = (where: Shared) => hostOf(where, { model: ({ sandbox }) => JSON.stringify(sandbox) })

  it.effect("a sandboxed session comes back after a restart with its sandbox, its paths absolute", () =>
    Effect.gen(function*() {
      const where = { disk: Testing.disk(), file: path.join(tempDir(), "state.db") }
      const sandbox = { network: { allow: ["github.com"] }, writable: ["/w/out"] }
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          yield* fleet.spawn("kept", { cwd: "/w", sandbox: { network: { allow: ["github.com"] }, writable: ["out"] } })
          yield* fleet.spawn("plain", { cwd: "/w" })
        })
      )
      yield* host(where)((fleet) =>
        Effect.gen(function*() {
          assert.deepStrictEqual(fleet.restored.restored.map((r) => r.name).sort(), ["kept", "plain"])
          assert.deepStrictEqual((yield* fleet.info("kept")).sandbox, sandbox)
          assert.notProperty(yield* fleet.info("plain"), "sandbox")
          // The restarted process was started sandboxed again.
          assert.deepStrictEqual(JSON.parse(yield* fleet.ask("kept", "where")), {
            writable: ["/w", "/w/out"],
            hosts: ["github.com"]
          })
        })
      )
    }))
})
