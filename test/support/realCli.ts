/**
 * What every test of the real `claude` CLI needs: the pinned binary, the fake Messages API for the file's
 * tests, the offline environment under a temp root, and a fresh working directory per agent.
 */
import { afterAll, beforeAll } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Flotta } from "../../packages/core/src/Flotta.js"
import { type FakeMessagesApi, offlineEnv, startFakeMessagesApi } from "./FakeMessagesApi.js"

export { isAlive, waitGone } from "../../packages/core/test/support.js"

export const ROOT = path.resolve(import.meta.dirname, "..", "..")
export const CLAUDE = path.join(ROOT, "node_modules", ".bin", "claude")

export interface OfflineApi {
  readonly api: FakeMessagesApi
  /** A temp root (real path), removed after the file's tests. */
  readonly root: string
  /** The offline environment of CLAUDE-CLI.md, pointing at `api`. */
  readonly env: Record<string, string>
  /** A fresh working directory under the root, so the CLI's project state never mixes. */
  readonly workdir: (name: string) => string
}

/**
 * Starts the fake API before the file's tests and stops it after; read the fields inside tests. The CLI logs in
 * with an API key, or with `login: "subscription"` as a subscriber (the only login that sees usage limits).
 * `measure`: the API counts each request's input tokens from its size (they drop after a compaction).
 */
export const useOfflineApi = (
  prefix: string,
  options: { readonly login?: "api-key" | "subscription"; readonly measure?: boolean } = {}
): OfflineApi => {
  const state = {} as { api: FakeMessagesApi; root: string; env: Record<string, string> }
  beforeAll(async () => {
    state.api = await startFakeMessagesApi(options.measure === true ? { measure: true } : {})
    state.root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`)))
    state.env = offlineEnv(state.api, state.root, options.login)
  })
  afterAll(async () => {
    await state.api?.close()
    if (state.root !== undefined) fs.rmSync(state.root, { recursive: true, force: true })
  })
  return {
    get api() {
      return state.api
    },
    get root() {
      return state.root
    },
    get env() {
      return state.env
    },
    workdir: (name) => {
      const dir = path.join(state.root, "work", name)
      fs.mkdirSync(dir, { recursive: true })
      return dir
    }
  }
}

/** A free TCP port on 127.0.0.1. */
export { freePort } from "./ports.js"

export { waitUntil } from "./waiting.js"

/** One host's life: the engine `layer` is built, `body` runs on its Flotta, then it stops (and its children). */
export const hostOf = <LE>(layer: Layer.Layer<Flotta, LE>) => <A, E>(body: (fleet: Flotta) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(layer, scope).pipe(Effect.orDie)
    const exit = yield* Effect.exit(body(Context.get(context, Flotta)))
    yield* Scope.close(scope, Exit.void)
    return yield* exit
  })
