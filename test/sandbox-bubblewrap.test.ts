import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { sandboxSuite } from './sandbox-suite.js';

const available = await bubblewrapBackend.available();
sandboxSuite(bubblewrapBackend, available.ok ? {} : { skip: available.error });
