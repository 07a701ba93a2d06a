/** The system's command folders: the PATH of every host-side process swarmd starts for a sandbox. */
export const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
