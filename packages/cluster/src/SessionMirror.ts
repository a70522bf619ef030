/**
 * An agent's memory is the CLI's session file, `<config dir>/projects/<cwd key>/<session id>.jsonl`, which
 * `--resume` reads. It is mirrored into the cluster store as it grows (whole lines, after each turn), and written
 * back on the host an agent moves to, under that host's config dir and the key of the agent's cwd there, before
 * the agent starts again with `--resume`.
 */
import { FileSystem } from "@effect/platform"
import { Effect, Option } from "effect"
import * as os from "node:os"
import * as path from "node:path"

/** The CLI's state directory for a child with this environment (its own, over the host's). */
export const configDir = (env: Readonly<Record<string, string | undefined>>): string =>
  env.CLAUDE_CONFIG_DIR ?? path.join(env.HOME ?? os.homedir(), ".claude")

/** The CLI's project key for a working directory: every character but a-z, A-Z and 0-9 becomes '-'. */
export const cwdKey = (cwd: string): string => cwd.replace(/[^a-zA-Z0-9]/g, "-")

export const sessionFile = (dir: string, cwd: string, sessionId: string): string =>
  path.join(dir, "projects", cwdKey(cwd), `${sessionId}.jsonl`)

/** Where the session file is: under the cwd's key, else under any project (a cwd reached through a link). */
export const findSessionFile = Effect.fn("SessionMirror.findSessionFile")(
  function*(dir: string, cwd: string, sessionId: string) {
    const fs = yield* FileSystem.FileSystem
    const exists = (file: string) => fs.exists(file).pipe(Effect.orElseSucceed(() => false))
    const expected = sessionFile(dir, cwd, sessionId)
    if (yield* exists(expected)) return expected
    const projects = path.join(dir, "projects")
    for (const entry of yield* fs.readDirectory(projects).pipe(Effect.orElseSucceed(() => []))) {
      const candidate = path.join(projects, entry, `${sessionId}.jsonl`)
      if (yield* exists(candidate)) return candidate
    }
    return undefined
  }
)

/**
 * The whole lines written to `file` after byte `from`: the text and the offset after it. A line still being
 * written waits for the next read; a file that is not there has not grown.
 */
export const readGrowth = Effect.fn("SessionMirror.readGrowth")(function*(file: string, from: number) {
  const fs = yield* FileSystem.FileSystem
  const nothing = { text: "", next: from }
  return yield* Effect.scoped(Effect.gen(function*() {
    const handle = yield* fs.open(file, { flag: "r" })
    const size = Number((yield* handle.stat).size)
    if (size <= from) return nothing
    yield* handle.seek(from, "start")
    const read = yield* handle.readAlloc(size - from)
    if (Option.isNone(read)) return nothing
    const bytes = Buffer.from(read.value)
    const end = bytes.lastIndexOf(0x0a) + 1
    return { text: bytes.subarray(0, end).toString("utf8"), next: from + end }
  })).pipe(Effect.catchTag("SystemError", (e) => (e.reason === "NotFound" ? Effect.succeed(nothing) : e)))
})

/** Writes a mirrored conversation back where the CLI on this host looks for it; returns the file. */
export const writeBack = Effect.fn("SessionMirror.writeBack")(
  function*(dir: string, cwd: string, sessionId: string, text: string) {
    const fs = yield* FileSystem.FileSystem
    const file = sessionFile(dir, cwd, sessionId)
    yield* fs.makeDirectory(path.dirname(file), { recursive: true })
    yield* fs.writeFileString(file, text)
    return file
  }
)
