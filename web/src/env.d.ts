// Vite turns CSS imports into style tags; the compiler only needs to know they exist.
declare module '*.css';
