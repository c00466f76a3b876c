/** Entry of the console bundle: reads config.json, then renders the app (or why it cannot). */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { loadConfig } from './config.ts';
import './styles.css';

const element = document.getElementById('root');
if (element === null) throw new Error('index.html has no #root');
const root = createRoot(element);
loadConfig().then(
  (config) =>
    root.render(
      <StrictMode>
        <App config={config} />
      </StrictMode>,
    ),
  (error: unknown) =>
    root.render(
      <main className="fatal">
        <h1>The console cannot start</h1>
        <p>{error instanceof Error ? error.message : String(error)}</p>
      </main>,
    ),
);
