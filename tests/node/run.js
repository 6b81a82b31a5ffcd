'use strict';
// Runs the Node package's tests (test_sonde.js) with node's built-in test runner. Exits 77
// (skipped) when koffi cannot be found from bindings/node: scripts/deps.sh installs it into
// node_modules/ at the source root.
const path = require('path');
const { spawnSync } = require('child_process');

const pkg = path.join(__dirname, '..', '..', 'bindings', 'node');
try {
  require.resolve('koffi', { paths: [pkg] });
} catch (e) {
  console.log('koffi is not installed (scripts/deps.sh installs it into node_modules/): skipped');
  process.exit(77);
}
const r = spawnSync(process.execPath, ['--test', path.join(__dirname, 'test_sonde.js')], { stdio: 'inherit' });
process.exit(r.status === null ? 1 : r.status);
