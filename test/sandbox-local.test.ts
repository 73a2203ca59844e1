import { localBackend } from '../sandboxes/local.js';
import { sandboxSuite } from './sandbox-suite.js';

// local isolates nothing: the suite checks that it says so and refuses egress it cannot enforce.
sandboxSuite(localBackend);
