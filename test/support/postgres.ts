/**
 * A throwaway Postgres server for a test run: `initdb` into a temp dir, loopback only (127.0.0.1 on a free port,
 * the unix socket inside the temp dir), trust auth, fsync off. As root it runs the server as the `postgres` user
 * (postgres refuses to run as root) through `runuser`. Plain async Node, for `beforeAll` / `afterAll`.
 *
 * A test process that ends without calling `stop` does not leave the server behind: a process "exit" handler
 * stops it synchronously, and a small detached watchdog stops it within a second or two of a crash or a kill.
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { freePort } from "./ports.js"

export interface Postgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, the superuser on the default database. */
  readonly url: string
  readonly dataDir: string
  /** Stops the server (`pg_ctl stop -m immediate`) and removes the temp dir; calling it again does nothing. */
  readonly stop: () => Promise<void>
  /** Creates a database owned by the superuser and returns its url. */
  readonly createDatabase: (name: string) => Promise<string>
}

const TOOLS = ["initdb", "pg_ctl", "postgres", "createdb"] as const
const PREFERRED = "/usr/lib/postgresql/15/bin"
const RUN_AS = "postgres"
const START_SECONDS = 60

const isRoot = () => process.getuid?.() === 0

const isExecutable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

/** The directory holding `initdb` on PATH, with symlinks resolved (Debian links /usr/local/bin into the real dir). */
const initdbOnPath = () => {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue
    const candidate = path.join(dir, "initdb")
    if (isExecutable(candidate)) return path.dirname(fs.realpathSync(candidate))
  }
  return undefined
}

/** The Postgres bin directory (15 preferred), or why there is none usable here. */
export const findPostgresBinaries = (): { readonly bin: string } | { readonly missing: string } => {
  const candidates = [PREFERRED, initdbOnPath()].filter((dir): dir is string => dir !== undefined)
  const bin = candidates.find((dir) => TOOLS.every((tool) => isExecutable(path.join(dir, tool))))
  if (bin === undefined) {
    return {
      missing: `Postgres binaries (${TOOLS.join(", ")}) in ${PREFERRED} or next to an initdb on PATH` +
        ` (looked in: ${candidates.length === 0 ? "nothing found" : candidates.join(", ")})`
    }
  }
  if (isRoot()) {
    if (!isExecutable("/usr/sbin/runuser") && !isExecutable("/sbin/runuser")) {
      return { missing: "runuser, needed to run postgres as a non-root user (this process is root)" }
    }
    if (spawnSync("id", ["-u", RUN_AS], { stdio: "ignore" }).status !== 0) {
      return { missing: `a '${RUN_AS}' OS user to run the server as (postgres refuses to run as root)` }
    }
  }
  return { bin }
}

/** The command line that runs `file args` as the server's user: as is, or through runuser when we are root. */
const asServerUser = (file: string, args: ReadonlyArray<string>): [string, Array<string>] =>
  isRoot() ? ["runuser", ["-u", RUN_AS, "--", file, ...args]] : [file, [...args]]

interface Ran {
  readonly code: number | null
  readonly output: string
}

const run = (file: string, args: ReadonlyArray<string>, cwd: string, timeoutMs: number) =>
  new Promise<Ran>((resolve, reject) => {
    const child = spawn(file, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (d) => (output += d))
    child.stderr.on("data", (d) => (output += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })

const runOrThrow = async (what: string, file: string, args: ReadonlyArray<string>, cwd: string, timeoutMs: number) => {
  const ran = await run(file, args, cwd, timeoutMs)
  if (ran.code !== 0) throw new Error(`${what} failed (exit ${ran.code}): ${ran.output.trim()}`)
  return ran
}

const readLog = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8").trim()
  } catch {
    return "(no server log)"
  }
}

/**
 * Watches this process from outside: once it is gone (a crash, a SIGKILL from the runner) the watchdog stops
 * the server and removes the temp dir. Paths travel in the environment, so nothing needs shell quoting.
 */
const startWatchdog = (pgCtl: string, dataDir: string, root: string) => {
  const stopCommand = isRoot()
    ? `runuser -u ${RUN_AS} -- "$PG_CTL" stop -D "$PG_DATA" -m immediate -w`
    : `"$PG_CTL" stop -D "$PG_DATA" -m immediate -w`
  const script = `while kill -0 "$WATCHED" 2>/dev/null; do sleep 1; done; ${stopCommand}; rm -rf "$PG_ROOT"`
  const watchdog = spawn("/bin/sh", ["-c", script], {
    cwd: "/",
    detached: true,
    stdio: "ignore",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      WATCHED: String(process.pid),
      PG_CTL: pgCtl,
      PG_DATA: dataDir,
      PG_ROOT: root
    }
  })
  watchdog.on("error", () => {}) // best effort: the exit handler still covers a normal exit
  watchdog.unref()
  return watchdog
}

/** Starts a fresh server; rejects (with the server log) if it is not accepting connections within 60 s. */
export const startPostgres = async (): Promise<Postgres> => {
  const found = findPostgresBinaries()
  if ("missing" in found) throw new Error(`cannot start Postgres: missing ${found.missing}`)
  const tool = (name: (typeof TOOLS)[number]) => path.join(found.bin, name)

  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-pg-")))
  const dataDir = path.join(root, "data")
  const logFile = path.join(root, "postgres.log")
  const removeRoot = () => fs.rmSync(root, { recursive: true, force: true })
  try {
    if (isRoot()) {
      const uid = spawnSync("id", ["-u", RUN_AS], { encoding: "utf8" }).stdout.trim()
      const gid = spawnSync("id", ["-g", RUN_AS], { encoding: "utf8" }).stdout.trim()
      fs.chownSync(root, Number(uid), Number(gid))
    }
    await runOrThrow(
      "initdb",
      ...asServerUser(tool("initdb"), [
        "-D",
        dataDir,
        "-U",
        "postgres",
        "--auth=trust",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions"
      ]),
      root,
      120_000
    )
  } catch (error) {
    removeRoot()
    throw error
  }
  // Loopback and the temp dir only, and no durability (a crash loses nothing we keep). The port goes on the
  // command line, so a retry can pick another. Root may append to the server user's file; it stays theirs.
  fs.appendFileSync(
    path.join(dataDir, "postgresql.conf"),
    [
      "",
      "# flotta test server",
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${root}'`,
      "fsync = off",
      "synchronous_commit = off",
      "full_page_writes = off",
      "max_connections = 50",
      ""
    ].join("\n")
  )

  const pgCtl = tool("pg_ctl")
  const stopSync = () => {
    const [file, args] = asServerUser(pgCtl, ["stop", "-D", dataDir, "-m", "immediate", "-w", "-s"])
    spawnSync(file, args, { cwd: "/", stdio: "ignore", timeout: 30_000 })
    removeRoot()
  }
  const onExit = () => stopSync()
  process.on("exit", onExit)
  const watchdog = startWatchdog(pgCtl, dataDir, root)
  const disarm = () => {
    process.off("exit", onExit)
    if (watchdog.pid !== undefined) {
      try {
        process.kill(watchdog.pid, "SIGKILL")
      } catch {
        // already gone
      }
    }
  }

  // The port is free when chosen but another process may take it before the server binds: try a few.
  let port = 0
  let started = false
  let lastError = ""
  for (let attempt = 0; attempt < 3 && !started; attempt++) {
    port = await freePort()
    const [file, args] = asServerUser(pgCtl, [
      "start",
      "-D",
      dataDir,
      "-l",
      logFile,
      "-w",
      "-t",
      String(START_SECONDS),
      "-s",
      "-o",
      `-p ${port}`
    ])
    const ran = await run(file, args, root, (START_SECONDS + 30) * 1000)
    if (ran.code === 0) started = true
    else {
      lastError = `pg_ctl start (port ${port}) failed (exit ${ran.code}): ${ran.output.trim()}\n${readLog(logFile)}`
      spawnSync(...asServerUser(pgCtl, ["stop", "-D", dataDir, "-m", "immediate", "-w", "-s"]), { stdio: "ignore" })
      if (!/could not bind|already in use/i.test(readLog(logFile))) break
    }
  }
  if (!started) {
    disarm()
    removeRoot()
    throw new Error(lastError)
  }

  const urlFor = (database: string) => `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`
  let stopped = false
  return {
    url: urlFor("postgres"),
    dataDir,
    stop: async () => {
      if (stopped) return
      stopped = true
      disarm()
      try {
        await runOrThrow(
          "pg_ctl stop",
          ...asServerUser(pgCtl, ["stop", "-D", dataDir, "-m", "immediate", "-w", "-s"]),
          "/",
          60_000
        )
      } finally {
        removeRoot()
      }
    },
    createDatabase: async (name) => {
      await runOrThrow(
        `createdb ${name}`,
        tool("createdb"),
        ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "--maintenance-db=postgres", name],
        "/",
        60_000
      )
      return urlFor(name)
    }
  }
}
