import { conformanceOver } from './conformance-over.js';

conformanceOver('WebTransport HTTP/3 json');
