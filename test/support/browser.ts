/**
 * A real browser for the dashboard tests: Debian's Chromium (`/usr/bin/chromium`, installed by `.ci/run` when
 * missing, because Playwright's own browser download does not work on these machines) driven by playwright-core.
 * Screenshots are test artifacts under `test-artifacts/` (git-ignored), never in git.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { ROOT } from "./cli.js"

/** Debian's Chromium, unless `FLOTTA_CHROMIUM` names another Chromium or Chrome executable. */
export const CHROMIUM = process.env["FLOTTA_CHROMIUM"] ?? "/usr/bin/chromium"

/** Where screenshots go (git-ignored). */
export const ARTIFACTS = path.join(ROOT, "test-artifacts")

/** Launches headless Chromium; close it with `browser.close()`. */
export const launchBrowser = (): Promise<Browser> => {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium), as .ci/run does, ` +
        "or name a Chromium in FLOTTA_CHROMIUM"
    )
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 60_000,
    args: [
      "--no-sandbox", // CI runs as root, where Chromium's sandbox refuses to start
      "--disable-dev-shm-usage",
      "--disable-gpu",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-component-update"
    ]
  })
}

/** Saves a full-page screenshot of `page` as `test-artifacts/<name>.png` and returns its path. */
export const screenshot = async (page: Page, name: string, options: { readonly fullPage?: boolean } = {}) => {
  fs.mkdirSync(ARTIFACTS, { recursive: true })
  const file = path.join(ARTIFACTS, `${name.replace(/[^A-Za-z0-9._-]+/g, "-")}.png`)
  await page.screenshot({ path: file, fullPage: options.fullPage ?? true })
  return file
}
