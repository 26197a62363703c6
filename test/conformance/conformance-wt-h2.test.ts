import { conformanceOver } from './conformance-over.js';

conformanceOver('WebTransport HTTP/2 json');
