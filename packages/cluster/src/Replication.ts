/**
 * What a host copies into the cluster store as it happens: its report entries (into the fleet-wide log), each
 * finished turn's conversation growth (the CLI's session file, whole lines), and the names of agents closed here
 * for good (freed in the cluster). A host an agent moves to reads the conversation back before it resumes it.
 */
import * as EngineEvents from "@flotta/core/EngineEvents"
import { Duration, Effect, Option, Ref, Stream } from "effect"
import type { HostingShape } from "./Hosting.js"
import * as SessionMirror from "./SessionMirror.js"

const PAGE = 1000

/** Copies this host's report entries into the cluster's log, and each finished turn's conversation growth. */
export const copyReports = Effect.fn("Replication.copyReports")(function*(h: HostingShape) {
  return yield* Effect.gen(function*() {
    const me = h.membership.settings.host
    // Woken by entries the log keeps (a streaming agent's words are live only: nothing to copy).
    const wake = yield* h.localLog.subscribe({ capacity: 1, keptOnly: true })
    let cursor = 0
    const pass = Effect.gen(function*() {
      while (true) {
        const page = yield* h.localLog.reports({ since: cursor, limit: PAGE })
        if (page.entries.length > 0) {
          yield* h.store.appendReports(me, page.entries)
          for (const entry of page.entries) {
            // A turn's end (its conversation grew), a close (its name is free): the kinds alone say so.
            if (entry.kind === EngineEvents.result.kind || entry.kind === EngineEvents.error.kind) {
              yield* mirror(h, entry.agent)
            }
            if (entry.kind === EngineEvents.closed.kind) yield* forget(h, entry.agent)
          }
        }
        cursor = page.next
        if (page.entries.length < PAGE) return
      }
    })
    return yield* pass.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("cluster: copying reports failed; it runs again", cause)),
      Effect.zipRight(Effect.race(Stream.runHead(wake), Effect.sleep(Duration.seconds(1)))),
      Effect.forever
    )
  }).pipe(Effect.scoped)
})

/** An agent closed here (by request, or for good after crashes): its name is free in the cluster. */
const forget = (h: HostingShape, name: string) =>
  Effect.gen(function*() {
    if (!h.agents.has(name)) return
    h.agents.delete(name)
    const p = yield* h.store.placement(name)
    const incarnation = yield* Ref.get(h.membership.incarnation)
    if (Option.isSome(p) && p.value.host === h.membership.settings.host && p.value.incarnation === incarnation) {
      yield* h.store.remove(name, p.value.epoch)
    }
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`cluster: could not free ${name}`, cause)))

/** Appends what the agent's session file grew by since the last copy. */
const mirror = (h: HostingShape, name: string) =>
  Effect.gen(function*() {
    const entry = h.agents.get(name)
    if (entry === undefined) return
    const agent = yield* Effect.option(h.registry.get(name))
    if (Option.isNone(agent)) return
    const info = yield* agent.value.info
    if (entry.mirrored.id !== info.sessionId) entry.mirrored = { id: info.sessionId, bytes: 0 }
    const dir = SessionMirror.configDir({ ...process.env, ...h.childEnv, ...entry.env })
    const file = yield* SessionMirror.findSessionFile(dir, info.cwd, info.sessionId)
    if (file === undefined) return
    const from = entry.mirrored.bytes
    const growth = yield* SessionMirror.readGrowth(file, from)
    if (growth.text.length === 0) return
    yield* h.store.appendSession(name, info.sessionId, from, growth.text)
    entry.mirrored = { id: info.sessionId, bytes: growth.next }
  }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`cluster: could not mirror ${name}`, cause)))

/**
 * Writes an agent's mirrored conversation back where this host's CLI looks for it (under the key of its cwd
 * here): the session id to resume, or undefined when nothing was mirrored.
 */
export const restoreSession = Effect.fn("Replication.restoreSession")(
  function*(
    h: HostingShape,
    name: string,
    cwd: string,
    sessionId: string | null,
    env: Readonly<Record<string, string>> | undefined
  ) {
    if (sessionId === null) return undefined
    const mirrored = yield* h.store.session(name, sessionId)
    if (mirrored.text.length === 0) return undefined
    const dir = SessionMirror.configDir({ ...process.env, ...h.childEnv, ...env })
    yield* SessionMirror.writeBack(dir, cwd, sessionId, mirrored.text).pipe(Effect.orDie)
    return sessionId
  }
)

/** After a resume: the agent's new session file starts where the mirrored one ended. */
export const resumedFrom = Effect.fn("Replication.resumedFrom")(
  function*(h: HostingShape, name: string, resumed: string, sessionId: string) {
    const mirrored = yield* h.store.session(name, resumed)
    const entry = h.agents.get(name)
    if (entry !== undefined) entry.mirrored = { id: sessionId, bytes: mirrored.bytes }
  }
)
