/**
 * What every test of the real `claude` CLI needs: the pinned binary, the fake Messages API for the file's
 * tests, the offline environment under a temp root, and a fresh working directory per agent.
 */
import { afterAll, beforeAll } from "@effect/vitest"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
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

/** Starts the fake API before the file's tests and stops it after; read the fields inside tests. */
export const useOfflineApi = (prefix: string): OfflineApi => {
  const state = {} as { api: FakeMessagesApi; root: string; env: Record<string, string> }
  beforeAll(async () => {
    state.api = await startFakeMessagesApi()
    state.root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`)))
    state.env = offlineEnv(state.api, state.root)
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
export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Polls a condition (real time) until it holds, or fails naming what it waited for. */
export const waitUntil = async (check: () => boolean, ms: number, what: string) => {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
