/** A backend's message is "what is wrong; what to do": split into doctor's detail and fix. */
export function splitHint(message: string): [string, string] {
  const m = /^(.*?)(?:; | \. |\. )((?:install|It needs|start|use) .*)$/s.exec(message);
  return m ? [m[1]!, m[2]!] : [message, 'see the message above'];
}
