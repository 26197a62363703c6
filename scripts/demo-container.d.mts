import type Docker from 'dockerode';

export declare const DEMO: string;
export declare function demoContainer(docker: Docker, name?: string): Promise<string | undefined>;
