// node failing.mjs SUITE_DIR RESULTS.json: the tests the suite judges as
// failed (required, optional, by dependency, in setup), grouped by the
// suite's test groups; the informational checks (yes/no) are left out.
import fs from 'fs'
import path from 'path'
import { pathToFileURL } from 'url'

const [suiteDir, resultsFile] = process.argv.slice(2)
const tests = (await import(pathToFileURL(path.join(suiteDir, 'tests/index.mjs')))).default
const { determineTestResult, resultTypes } = await import(pathToFileURL(path.join(suiteDir, 'test-engine/lib/results.mjs')))
const names = new Map(Object.entries(resultTypes).map(([k, v]) => [v, k]))
const res = JSON.parse(fs.readFileSync(resultsFile, 'utf8'))
for (const suite of tests) {
  const lines = []
  for (const t of suite.tests) {
    const n = names.get(determineTestResult(tests, t.id, res)) || 'other'
    if (['pass', 'untested', 'yes', 'no'].includes(n)) continue
    const why = Array.isArray(res[t.id]) ? res[t.id][1] : res[t.id]
    lines.push(`  ${n.padEnd(15)} ${t.id}${why && why !== true ? ': ' + String(why).slice(0, 140) : ''}`)
  }
  if (lines.length) console.log(`${suite.name} (${lines.length})\n${lines.join('\n')}`)
}
